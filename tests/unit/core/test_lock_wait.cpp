// Unit tests for wait_sandbox_lock (core/session_util.h) and proc::flock_holders: a command that
// finds a sandbox locked waits for the holder, but not on something that cannot finish: a stopped
// holder, or a holder waiting on a stopped VMM, gives a clear EAGAIN error at once; with
// StoppedVmm::Kill (destroy --force) the stopped VMM is killed, the holder lets go, and the lock
// is taken; destroy --force then succeeds even when the holder removed the sandbox itself. The VMM
// is a stand-in sleep process (FakeSandbox).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "core/sandbox.h"
#include "core/session_util.h"
#include "support/fake_sandbox.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/procfs.h"

using namespace space;
using space::test::FakeSandbox;

namespace {

// A child that takes the flock on `path`, tells us through a pipe, and holds it until `vmm`
// (pid, start time) is no longer alive, or for 30 s; then removes `undo_dir` if one is given (as
// a failed create removes its half-made sandbox) and exits, letting go.
proc::Child hold_lock(const std::string& path, pid_t vmm, uint64_t vmm_start,
                      const std::string& undo_dir = "") {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(ready[0]);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
    if (::write(ready[1], "x", 1) != 1) ::_exit(1);
    for (int i = 0; i < 3000 && proc::is_alive(vmm, vmm_start); i++) ::usleep(10000);
    if (!undo_dir.empty()) {
      try {
        fs::remove_tree(undo_dir);
      } catch (...) {
        ::_exit(1);
      }
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  ::close(ready[0]);
  return proc::Child(pid);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("flock_holders names the process holding a lock, and no one once it lets go") {
  FakeSandbox f("held");
  CHECK(proc::flock_holders(f.p.lock).empty());  // the file exists, no one holds it
  proc::Child holder = hold_lock(f.p.lock, f.vmm.pid(), proc::start_time(f.vmm.pid()).value());
  auto holders = proc::flock_holders(f.p.lock);
  REQUIRE(holders.size() == 1);
  CHECK(holders[0] == holder.pid());
  CHECK(proc::command_line(holder.pid()).find("unit") != std::string::npos);
  ::kill(holder.pid(), SIGKILL);
  holder.wait();
  CHECK(proc::flock_holders(f.p.lock).empty());
}

TEST_CASE("a free lock is taken at once, and a busy one once its holder lets go") {
  FakeSandbox f("free");
  {
    store::SandboxLock l = core::wait_sandbox_lock(f.p, "free");
    CHECK(l.held());
  }
  proc::Child holder = hold_lock(f.p.lock, f.vmm.pid(), proc::start_time(f.vmm.pid()).value());
  pid_t vmm = f.vmm.pid();
  pid_t killer = ::fork();  // ends the stand-in VMM in 0.3 s, so the holder lets go
  REQUIRE(killer >= 0);
  if (killer == 0) {
    ::usleep(300000);
    ::kill(vmm, SIGKILL);
    ::_exit(0);
  }
  proc::Child k(killer);
  store::SandboxLock l = core::wait_sandbox_lock(f.p, "free");
  CHECK(l.held());
  CHECK(holder.exited());
}

TEST_CASE("a stopped holder gives a clear error at once") {
  FakeSandbox f("stuck");
  proc::Child holder = hold_lock(f.p.lock, f.vmm.pid(), proc::start_time(f.vmm.pid()).value());
  REQUIRE(::kill(holder.pid(), SIGSTOP) == 0);
  auto t0 = std::chrono::steady_clock::now();
  try {
    core::wait_sandbox_lock(f.p, "stuck");
    FAIL("the lock was taken from a stopped holder");
  } catch (const Error& e) {
    CHECK(e.err() == EAGAIN);
    CHECK(std::string(e.what()).find("locked by pid " + std::to_string(holder.pid())) !=
          std::string::npos);
    CHECK(std::string(e.what()).find("stopped") != std::string::npos);
    CHECK(e.hint() == "'kill -CONT " + std::to_string(holder.pid()) + "' lets it go on and finish");
  }
  CHECK(seconds_since(t0) < 10);
}

TEST_CASE("a holder waiting on a stopped VMM: an error naming both, or, with Kill, the lock") {
  FakeSandbox f("hung");
  const pid_t vmm = f.vmm.pid();
  proc::Child holder = hold_lock(f.p.lock, vmm, proc::start_time(vmm).value());
  REQUIRE(::kill(vmm, SIGSTOP) == 0);
  try {
    core::wait_sandbox_lock(f.p, "hung");
    FAIL("the lock was taken while its holder held it");
  } catch (const Error& e) {
    CHECK(e.err() == EAGAIN);
    const std::string what = e.what();
    CHECK(what.find("pid " + std::to_string(holder.pid())) != std::string::npos);
    CHECK(what.find("its VMM (pid " + std::to_string(vmm) + ") is stopped") != std::string::npos);
    CHECK(e.hint().find("kill -CONT " + std::to_string(vmm)) != std::string::npos);
    CHECK(e.hint().find("space destroy --force hung") != std::string::npos);
  }
  CHECK_FALSE(holder.exited());  // nothing was killed without Kill

  store::SandboxLock l = core::wait_sandbox_lock(f.p, "hung", core::StoppedVmm::Kill);
  CHECK(l.held());
  CHECK(f.vmm.exited());
  CHECK(WIFSIGNALED(f.vmm.status()));
  CHECK(WTERMSIG(f.vmm.status()) == SIGKILL);
  CHECK(holder.exited());
}

TEST_CASE("a sandbox removed while a command waits for its lock does not exist") {
  FakeSandbox f("gone");
  proc::Child holder = hold_lock(f.p.lock, f.vmm.pid(), proc::start_time(f.vmm.pid()).value());
  const std::string dir = f.p.dir;
  pid_t remover = ::fork();  // as the holder (a destroy) would, in 0.3 s: its fd keeps the lock
  REQUIRE(remover >= 0);
  if (remover == 0) {
    ::usleep(300000);
    try {
      fs::remove_tree(dir);
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  proc::Child r(remover);
  CHECK_THROWS_WITH_AS(core::wait_sandbox_lock(f.p, "gone"), "sandbox gone does not exist", Error);
  CHECK(r.wait() == 0);
}

TEST_CASE("a waiting command does not make the lock file again while a destroy removes it") {
  // The destroy has unlinked the lock file and not yet state.json: the waiter must not make the
  // file again (the destroy could not remove the directory then), and it finds the sandbox gone
  // once state.json goes too.
  FakeSandbox f("going");
  REQUIRE(::unlink(f.p.lock.c_str()) == 0);
  pid_t remover = ::fork();
  REQUIRE(remover >= 0);
  if (remover == 0) {
    ::usleep(300000);
    ::_exit(::unlink(f.p.state.c_str()) == 0 ? 0 : 1);
  }
  proc::Child r(remover);
  CHECK_THROWS_WITH_AS(core::wait_sandbox_lock(f.p, "going"), "sandbox going does not exist",
                       Error);
  CHECK(r.wait() == 0);
  CHECK_FALSE(fs::exists(f.p.lock));
}

TEST_CASE("a sandbox without a lock file of its own gets one after a second's wait") {
  FakeSandbox f("nolock");
  REQUIRE(::unlink(f.p.lock.c_str()) == 0);
  auto t0 = std::chrono::steady_clock::now();
  store::SandboxLock l = core::wait_sandbox_lock(f.p, "nolock");
  CHECK(l.held());
  CHECK(fs::exists(f.p.lock));
  CHECK(seconds_since(t0) >= 0.9);
}

TEST_CASE(
    "destroy --force frees a create stuck on a stopped VMM, and succeeds once it cleaned up") {
  FakeSandbox f("frozen");
  const pid_t vmm = f.vmm.pid();
  proc::Child holder = hold_lock(f.p.lock, vmm, proc::start_time(vmm).value(), f.p.dir);
  REQUIRE(::kill(vmm, SIGSTOP) == 0);
  CHECK_THROWS_WITH_AS(core::destroy_sandbox(f.ctx, "frozen", /*force=*/false),
                       doctest::Contains("is stopped (SIGSTOP or a debugger)"), Error);
  CHECK_FALSE(f.vmm.exited());
  core::destroy_sandbox(f.ctx, "frozen", /*force=*/true);
  CHECK(f.vmm.exited());
  CHECK(holder.wait() == 0);
  CHECK_FALSE(fs::exists(f.p.dir));
}
