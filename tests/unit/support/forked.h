// Forked children for tests that change what only a process of their own may change (namespaces,
// mounts): one that reports a string back, and several at once that must all succeed.
#pragma once
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "util/fd.h"

namespace space::test {

// Runs `body` in a forked child and returns what it returned (written back through a pipe);
// the child is reaped.
inline std::string output_of_child(const std::function<std::string()>& body) {
  Pipe out = Pipe::make();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    out.read.reset();
    std::string s = body();
    (void)!::write(out.write.get(), s.data(), s.size());
    ::_exit(0);
  }
  out.write.reset();
  std::string s;
  char buf[256];
  ssize_t n;
  while ((n = ::read(out.read.get(), buf, sizeof buf)) > 0) s.append(buf, size_t(n));
  ::waitpid(pid, nullptr, 0);
  return s;
}

// Runs `body` in `count` forked children at once; checks that each exited 0 (`body` threw
// nothing).
inline void check_concurrent_children(int count, const std::function<void()>& body) {
  std::vector<pid_t> kids;
  for (int i = 0; i < count; i++) {
    pid_t k = ::fork();
    REQUIRE(k >= 0);
    if (k == 0) {
      try {
        body();
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    kids.push_back(k);
  }
  for (pid_t k : kids) {
    int st = 0;
    REQUIRE(::waitpid(k, &st, 0) == k);
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
  }
}

}  // namespace space::test
