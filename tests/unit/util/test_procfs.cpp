// Unit tests for util/procfs (threads and children): this process's threads (its main thread and
// one started here), its children (a forked sleep, and not once it is reaped), and a process that
// has gone.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "util/procfs.h"

using namespace space;

namespace {
bool has(const std::vector<pid_t>& v, pid_t p) {
  return std::find(v.begin(), v.end(), p) != v.end();
}
}  // namespace

TEST_CASE("process tree: threads and children of this process") {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> stop{false};
  std::thread t([&] {
    tid = ::gettid();
    while (!stop) ::usleep(1000);
  });
  while (!tid) ::usleep(1000);
  auto threads = proc::threads_of(::getpid());
  CHECK(has(threads, ::getpid()));  // the main thread's id is the pid
  CHECK(has(threads, tid.load()));
  stop = true;
  t.join();

  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::execl("/bin/sleep", "sleep", "60", nullptr);
    ::_exit(127);
  }
  CHECK(has(proc::children_of(::getpid()), child));
  ::kill(child, SIGKILL);
  REQUIRE(::waitpid(child, nullptr, 0) == child);
  CHECK_FALSE(has(proc::children_of(::getpid()), child));
  CHECK(proc::threads_of(child).empty());  // gone
  CHECK(proc::children_of(child).empty());
}
