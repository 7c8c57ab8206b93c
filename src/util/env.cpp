// Environment settings; see env.h.
#include "util/env.h"

#include <cstdlib>
#include <string>

#include "util/error.h"

namespace space::env {

int seconds(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n <= 0 || n > 86400)
    fail(std::string(name) + "=" + v + ": not a number of seconds in 1..86400",
         std::string("set ") + name + " to a whole number of seconds, e.g. " +
             std::to_string(fallback));
  return static_cast<int>(n);
}

std::vector<std::string> daemon_environment() {
  std::vector<std::string> env = {
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  for (const char* name : {"SPACE_RUN_DIR", "SPACE_CRED_DIR", "SPACE_CACHE", "SPACE_SECCOMP",
                           "SPACE_CREDD_IDLE_SECONDS", "SPACE_EGRESS_IDLE_SECONDS"}) {
    const char* v = std::getenv(name);
    if (v && *v) env.push_back(std::string(name) + "=" + v);
  }
  return env;
}

}  // namespace space::env
