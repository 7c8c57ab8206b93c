// Unit tests for util/reap, the PID 1 reap loop: every ended child is collected with its status,
// a live one is not, ECHILD is said once none is left, and a wait for one child collects the
// others that end first. Each case runs in a forked child of its own, whose children are its
// alone (a waitpid(-1) in the test binary could take another test's child).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <string>

#include "support/forked.h"
#include "util/reap.h"

using namespace space;

namespace {
pid_t child_exiting(int code, int after_ms = 0) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (after_ms) ::usleep(after_ms * 1000);
    ::_exit(code);
  }
  return pid;
}
}  // namespace

TEST_CASE("reap_ended collects every ended child with its status, and says when none is left") {
  std::string got = test::output_of_child([] {
    pid_t a = child_exiting(3);
    pid_t b = ::fork();
    if (b == 0) {
      ::pause();
      ::_exit(0);
    }
    pid_t c = child_exiting(0, 400);  // still running when we first look
    ::usleep(200'000);
    ::kill(b, SIGKILL);
    ::usleep(100'000);
    std::map<pid_t, int> seen;
    proc::Reaped r = proc::reap_ended([&](pid_t pid, int status) { seen[pid] = status; });
    std::string out;
    if (r.count != 2 || r.no_children) out += "first: count " + std::to_string(r.count) + ";";
    if (!seen.count(a) || !WIFEXITED(seen[a]) || WEXITSTATUS(seen[a]) != 3) out += "a;";
    if (!seen.count(b) || !WIFSIGNALED(seen[b]) || WTERMSIG(seen[b]) != SIGKILL) out += "b;";
    if (seen.count(c)) out += "c reaped early;";
    ::usleep(400'000);
    r = proc::reap_ended([&](pid_t pid, int status) { seen[pid] = status; });
    if (r.count != 1 || !seen.count(c)) out += "second: count " + std::to_string(r.count) + ";";
    r = proc::reap_ended([](pid_t, int) {});
    if (r.count != 0 || !r.no_children) out += "third: no ECHILD;";
    return out.empty() ? std::string("ok") : out;
  });
  CHECK(got == "ok");
}

TEST_CASE("wait_reaping_others returns its child's status, collecting others that end first") {
  std::string got = test::output_of_child([] {
    pid_t other = child_exiting(1);
    pid_t mine = child_exiting(7, 200);
    int status = proc::wait_reaping_others(mine);
    std::string out;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 7) out += "status;";
    if (::waitpid(other, nullptr, WNOHANG) != -1 || errno != ECHILD) out += "other not reaped;";
    if (proc::wait_reaping_others(mine) != -1 || errno != ECHILD) out += "no ECHILD;";
    return out.empty() ? std::string("ok") : out;
  });
  CHECK(got == "ok");
}
