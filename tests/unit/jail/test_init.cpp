// Unit tests for jail/init: serve_as_init() in a forked child that is a subreaper (standing in
// for a PID namespace's init) with a grandchild as its "VMM": it exits with the VMM's code, or
// 128+N when signal N killed it; it forwards SIGTERM, SIGINT and SIGHUP to the VMM while it lives
// and no longer afterwards; and an orphan that outlives the VMM keeps it alive until the orphan
// exits. Also exit_code_of() on waitpid() statuses, run_init() as a real namespace's PID 1, and
// refuse_placement() telling the VMM why its groups could not be made.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "jail/init.h"
#include "jail/mount_base.h"
#include "jail/seccomp_prebuilt.h"
#include "support/mount_base_dir.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/process.h"

using namespace space;

namespace {

// Forks an init: it becomes a subreaper, blocks the signals serve_as_init() takes, forks the
// VMM, which runs `vmm` with an empty signal mask and exits with what it returns, and serves as
// the VMM's init. Both have default signal actions and no core files. Returns the init's pid.
template <class Vmm>
pid_t start_init(Vmm vmm) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) ::_exit(120);
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    for (int s = 1; s < NSIG; s++) ::signal(s, SIG_DFL);  // not the test runner's handlers
    sigset_t set, none;
    sigemptyset(&set);
    sigemptyset(&none);
    for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
    ::sigprocmask(SIG_BLOCK, &set, nullptr);
    pid_t v = ::fork();
    if (v < 0) ::_exit(121);
    if (v == 0) {
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::_exit(vmm());
    }
    jail::serve_as_init(v);
  }
  return pid;
}

// The waitpid() status of `pid` once it exits, or -1 if it has not within `ms` (it is then
// killed and reaped).
int wait_for(pid_t pid, int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 || std::chrono::steady_clock::now() > end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    ::usleep(2000);
  }
}

bool exited_with(int status, int code) {
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

// Writes one byte to `fd`.
void send_byte(int fd) {
  char c = 'r';
  write_all(fd, &c, 1);
}

// Blocks until a byte arrives on `fd` (false on EOF).
bool await_byte(int fd) {
  char c;
  return read_full(fd, &c, 1) == 1;
}

}  // namespace

TEST_CASE("init: exits with the VMM's exit code") {
  for (int code : {0, 7, 125}) {
    CAPTURE(code);
    pid_t init = start_init([code] { return code; });
    CHECK(exited_with(wait_for(init, 2000), code));
  }
}

TEST_CASE("init: a VMM killed by signal N makes it exit 128+N") {
  pid_t init = start_init([] {
    ::kill(::getpid(), SIGKILL);
    return 0;
  });
  CHECK(exited_with(wait_for(init, 2000), 137));
  init = start_init([] {
    ::kill(::getpid(), SIGSEGV);  // no core file: RLIMIT_CORE is 0
    return 0;
  });
  CHECK(exited_with(wait_for(init, 2000), 139));
}

TEST_CASE("init: SIGTERM, SIGINT and SIGHUP are forwarded to the VMM") {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    CAPTURE(sig);
    Pipe ready = Pipe::make();
    int w = ready.write.get();
    pid_t init = start_init([w] {
      send_byte(w);
      for (;;) ::pause();
      return 0;
    });
    ready.write.reset();
    REQUIRE(await_byte(ready.read.get()));
    CHECK(::kill(init, sig) == 0);
    CHECK(exited_with(wait_for(init, 2000), 128 + sig));
  }
}

TEST_CASE("init: an orphan that outlives the VMM keeps it alive; signals then go nowhere") {
  Pipe ready = Pipe::make();
  int w = ready.write.get();
  auto start = std::chrono::steady_clock::now();
  pid_t init = start_init([w] {
    pid_t orphan = ::fork();
    if (orphan == 0) {
      send_byte(w);
      ::usleep(400 * 1000);
      ::_exit(9);
    }
    return 5;  // the VMM exits at once; the orphan becomes the init's child
  });
  ready.write.reset();
  REQUIRE(await_byte(ready.read.get()));
  ::usleep(150 * 1000);
  int status = 0;
  CHECK(::waitpid(init, &status, WNOHANG) == 0);  // still serving the orphan
  // The VMM is gone: SIGTERM is not forwarded (nor does it kill the init).
  CHECK(::kill(init, SIGTERM) == 0);
  ::usleep(50 * 1000);
  CHECK(::waitpid(init, &status, WNOHANG) == 0);
  status = wait_for(init, 2000);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)
                .count();
  CHECK(exited_with(status, 5));  // the VMM's code, not the orphan's
  CHECK(ms >= 390);
}

TEST_CASE("init: exit codes of waitpid statuses (proc::exit_code_of)") {
  CHECK(space::proc::exit_code_of(W_EXITCODE(0, 0)) == 0);
  CHECK(space::proc::exit_code_of(W_EXITCODE(7, 0)) == 7);
  CHECK(space::proc::exit_code_of(W_EXITCODE(255, 0)) == 255);
  CHECK(space::proc::exit_code_of(SIGKILL) == 137);
  CHECK(space::proc::exit_code_of(SIGTERM) == 143);
  CHECK(space::proc::exit_code_of(SIGSEGV | 0x80) == 139);  // with a core dump
  CHECK(space::proc::exit_code_of(W_STOPCODE(SIGSTOP)) == 1);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(42);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(space::proc::exit_code_of(status) == 42);
}

// run_init() as the PID 1 of a real PID namespace (cloned here, as root), with a forked child as
// its program: the program is moved into the "cgroup" of its procs file (here a plain file, so
// the pid written can be read) and the init into its own; the init enters a jail of its own
// (another mount namespace), keeps the claim as fd 3, runs as the given uid with no capability
// under the init program's filter, and exits with the program's code.
namespace {

// run_init as PID 1 of a new namespace, its program a child that reports (by its exit code)
// what the placed pipe told it: 5 "p", 9 kPlacementFailed and a reason naming the failed move,
// 7 EOF. With `fail_move` the program's cgroup.procs is /dev/full, where every move fails. Given
// `mount_base` (jail/mount_base.h), the init makes its root from it.
void run_init_case(bool fail_move, int mount_base = -1) {
  test::TempDir d("init");
  const std::string program_procs = d.path + "/program.procs", own_procs = d.path + "/own.procs";
  fs::write_file_atomic(program_procs, "", 0644, fs::Sync::Volatile);
  fs::write_file_atomic(own_procs, "", 0644, fs::Sync::Volatile);
  const std::string mnt = d.path + "/jail";
  fs::mkdir_p(mnt);
  Fd p_fd(::open(fail_move ? "/dev/full" : program_procs.c_str(), O_WRONLY | O_CLOEXEC));
  Fd o_fd(::open(own_procs.c_str(), O_WRONLY | O_CLOEXEC));
  REQUIRE(p_fd);
  REQUIRE(o_fd);
  Pipe claim = Pipe::make(), go = Pipe::make(), started = Pipe::make(), placed = Pipe::make();
  jail::Program filter = jail::prebuilt(jail::Role::Init);
  jail::InitPlan plan;
  plan.who = {1000000777, 1000000777};
  plan.uid_lock_fd = claim.write.get();
  plan.program_procs = {p_fd.get()};
  plan.own_procs = {o_fd.get()};
  plan.placed_fd = placed.write.get();
  plan.root_dir = mnt;
  plan.mount_base_fd = mount_base;
  plan.hostname = "init-test";
  plan.filter = &filter;
  pid_t init = static_cast<pid_t>(::syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0));
  REQUIRE(init >= 0);
  if (init == 0) {
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    for (int s = 1; s < NSIG; s++) ::signal(s, SIG_DFL);
    pid_t program = ::fork();
    if (program < 0) ::_exit(121);
    if (program == 0) {
      char c = 0, buf[512] = {};
      ::close(started.read.get());
      ::close(placed.write.get());  // as the launcher gives it: the read end only
      ::write(started.write.get(), "s", 1);
      ssize_t told = ::read(placed.read.get(), buf, sizeof buf - 1);
      if (::read(go.read.get(), &c, 1) != 1) ::_exit(6);
      if (told == 0) ::_exit(7);
      if (told == 1 && buf[0] == 'p') ::_exit(5);
      if (buf[0] == jail::kPlacementFailed && std::strstr(buf, "cannot move process 2")) ::_exit(9);
      ::_exit(8);
    }
    jail::run_init(program, plan);
  }
  claim.write.reset();
  placed.write.reset();
  placed.read.reset();
  go.read.reset();
  started.write.reset();
  REQUIRE(await_byte(started.read.get()));
  // The init is set up once its claim is fd 3 and its filter is in: poll /proc for that.
  const std::string status_path = "/proc/" + std::to_string(init) + "/status";
  std::string st;
  for (int i = 0; i < 500; i++) {
    st = fs::read_file(status_path, 64 * 1024);
    if (st.find("Seccomp:\t2") != std::string::npos) break;
    ::usleep(2000);
  }
  CHECK(st.find("Seccomp:\t2") != std::string::npos);
  CHECK(st.find("Uid:\t1000000777\t1000000777\t1000000777\t1000000777") != std::string::npos);
  CHECK(st.find("CapEff:\t0000000000000000") != std::string::npos);
  CHECK(st.find("NoNewPrivs:\t1") != std::string::npos);
  auto ns = [](pid_t pid, const char* kind) {
    struct stat s {};
    ::stat(("/proc/" + std::to_string(pid) + "/ns/" + kind).c_str(), &s);
    return s.st_ino;
  };
  CHECK(ns(init, "mnt") != ns(::getpid(), "mnt"));
  CHECK(ns(init, "pid") != ns(::getpid(), "pid"));
  // Its root is the directory, its one visible mount, read-only.
  struct stat root {
  }, dir{};
  CHECK(::stat(("/proc/" + std::to_string(init) + "/root").c_str(), &root) == 0);
  REQUIRE(::stat(mnt.c_str(), &dir) == 0);
  CHECK(root.st_ino == dir.st_ino);
  std::string mountinfo = fs::read_file("/proc/" + std::to_string(init) + "/mountinfo", 1u << 20);
  CHECK(std::count(mountinfo.begin(), mountinfo.end(), '\n') == 1);
  CHECK(mountinfo.find(" / ro,") != std::string::npos);
  if (!fail_move)
    CHECK(fs::read_file(program_procs) == "2");  // the program is PID 2 of the init's namespace
  CHECK(fs::read_file(own_procs) == "0");        // and the init moved itself
  send_byte(go.write.get());
  // Told it is placed; after a failed move, told why (the VMM then refuses to run).
  CHECK(exited_with(wait_for(init, 5000), fail_move ? 9 : 5));
  // The claim (the pipe's write end, held as fd 3 by the init) is gone with it.
  char c;
  CHECK(::read(claim.read.get(), &c, 1) == 0);
}

}  // namespace

// Needs root, and a build without AddressSanitizer: the init goes on, instrumented, under the
// init role's filter, which kills the calls ASan's runtime makes (sigaltstack before a noreturn
// call, its own mmaps).
TEST_CASE("init: run_init places, jails, drops and filters the PID 1, then serves" *
          doctest::skip(::geteuid() != 0 || test::kUnderAsan)) {
  SUBCASE("the VMM is told it is in its cgroups") {
    run_init_case(false);
  }
  SUBCASE("a failed move tells it why") {
    run_init_case(true);
  }
  SUBCASE("its root made from the jails' base mount namespace") {
    test::MountBaseDir dir("init-base");
    Fd base = jail::shared_mount_base(dir.path);
    run_init_case(false, base.get());
  }
}

TEST_CASE("init: refuse_placement tells the VMM why, then serves until it is gone") {
  Pipe placed = Pipe::make(), said = Pipe::make();
  jail::InitPlan plan;
  plan.placed_fd = placed.write.get();
  pid_t init = ::fork();  // no namespace needed: it only tells and reaps
  REQUIRE(init >= 0);
  if (init == 0) {
    pid_t program = ::fork();
    if (program < 0) ::_exit(121);
    if (program == 0) {  // relays what it was told to the test, then exits 4
      ::close(placed.write.get());
      char buf[256] = {};
      ssize_t n = ::read(placed.read.get(), buf, sizeof buf - 1);
      if (n > 0) write_all(said.write.get(), buf, static_cast<size_t>(n));
      ::_exit(4);
    }
    jail::refuse_placement(program, plan, "cgroup: mkdir /sys/fs/cgroup/x: Permission denied");
  }
  placed.write.reset();
  placed.read.reset();
  said.write.reset();
  char buf[256] = {};
  size_t n = read_full(said.read.get(), buf, sizeof buf - 1);
  CHECK(std::string(buf, n) == std::string(1, jail::kPlacementFailed) +
                                   "cgroup: mkdir /sys/fs/cgroup/x: Permission denied");
  CHECK(exited_with(wait_for(init, 5000), 4));  // the program's code, once it is gone
}
