// Unit tests for guest-init/reaper: a registered child's status reaches its callback even when it
// exits at once; unregistered and forgotten children are reaped and their statuses dropped.
// The Reaper waits for any child (waitpid(-1)), so these cases expect this process to have no
// other children while they run.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

#include "guest-init/reaper.h"

using namespace space::guest;

TEST_CASE("Reaper dispatches a registered child's status, even for an instant exit") {
  Reaper r;
  std::atomic<int> got{-1};
  pid_t pid = r.spawn(
      [] {
        pid_t p = ::fork();
        if (p == 0) ::_exit(7);
        return p;
      },
      [&](pid_t, int status) { got = WIFEXITED(status) ? WEXITSTATUS(status) : -2; });
  REQUIRE(pid > 0);
  CHECK(r.pending() == 1);
  for (int i = 0; i < 500 && got < 0; i++) {
    r.reap();
    ::usleep(2000);
  }
  CHECK(got == 7);
  CHECK(r.pending() == 0);
  CHECK(r.reap().no_children);
}

TEST_CASE("Reaper drops the statuses of unregistered and forgotten children") {
  Reaper r;
  bool called = false;
  pid_t a = ::fork();
  if (a == 0) ::_exit(0);
  pid_t b = r.spawn(
      [] {
        pid_t p = ::fork();
        if (p == 0) ::_exit(1);
        return p;
      },
      [&](pid_t, int) { called = true; });
  r.forget(b);
  int reaped = 0;
  for (int i = 0; i < 500 && reaped < 2; i++) {
    reaped += r.reap().reaped;
    ::usleep(2000);
  }
  CHECK(reaped == 2);
  CHECK_FALSE(called);
  CHECK(r.spawn([] { return pid_t(-1); }, [](pid_t, int) {}) == -1);
  CHECK(r.pending() == 0);
}
