// ScopedEnv: sets (or, with nullptr, unsets) one environment variable for the life of a test
// and puts back what was there before, so that one test's setting never reaches the next one in
// this single test binary.
#pragma once
#include <stdlib.h>

#include <optional>
#include <string>

namespace space::test {

struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const char* value) : name(std::move(n)) {
    if (const char* v = ::getenv(name.c_str())) old = v;
    if (value)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

}  // namespace space::test
