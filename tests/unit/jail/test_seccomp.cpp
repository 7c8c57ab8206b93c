// Unit tests for jail/seccomp: every role's filter compiles and lists what it allows (never
// execve), and, loaded in a forked child, lets the role's calls through and kills the child with
// SIGSYS on the others: socket() but AF_UNIX, execve, clone making a namespace, ioctl requests
// not listed, setting limits, other ABIs' calls; clone3 fails with ENOSYS instead. Unlisted::Log
// lets an unlisted call through (but still not execve), and $SPACE_SECCOMP picks it. The programs
// built in at build time are exactly what compile() gives now, and program() picks them for
// Unlisted::Kill; the tests below load them. Programs are made in the parent; the children make
// only raw system calls, up to and including their exit (exit_group directly: under ASan, a call to
// _exit is preceded by a sigaltstack call).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "jail/seccomp.h"
#include "jail/seccomp_prebuilt.h"
#include "support/scoped_env.h"
#include "support/skip.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/log.h"

using namespace space;
using jail::Role;

namespace {

// Ends a filtered child with exit_group itself. Not declared noreturn on purpose: before a call
// to a noreturn function ASan inserts __asan_handle_no_return, which calls sigaltstack, a call
// the filters kill. exit_group does not return, so nothing after a call runs.
void raw_exit(int code) {
  ::syscall(SYS_exit_group, code);
}

// Forks; the child loads `p` and exits with what `body` returns. No core file is written when a
// filter kills it. Returns the child's waitpid() status.
template <class Body>
int status_under(const jail::Program& p, Body body) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    rlimit none{0, 0};
    ::setrlimit(RLIMIT_CORE, &none);
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (jail::load(p) != 0) raw_exit(100);
    raw_exit(body());
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

// The same without a filter: what the calls do on this kernel. A call the kernel does not offer
// may end the child with a signal (int 0x80 without ia32 emulation: SIGSEGV), which must end it
// as the kernel would, not run the test framework's crash handler in the child (it would report
// this test as crashed).
template <class Body>
int status_unfiltered(Body body) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (int sig : {SIGSEGV, SIGILL, SIGBUS, SIGFPE, SIGABRT, SIGSYS}) ::signal(sig, SIG_DFL);
    rlimit none{0, 0};
    ::setrlimit(RLIMIT_CORE, &none);
    raw_exit(body());
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

bool killed_by_sigsys(int status) {
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS;
}
bool exited_ok(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// execve("/bin/true"): exits 0 if it ran.
int exec_true() {
  const char* argv[] = {"/bin/true", nullptr};
  const char* envp[] = {nullptr};
  ::syscall(SYS_execve, "/bin/true", argv, envp);
  return 1;
}

int socket_of(int domain) {
  return ::syscall(SYS_socket, domain, SOCK_STREAM, 0) >= 0 ? 0 : 1;
}

bool lists(const std::vector<std::string>& v, const char* name) {
  return std::find(v.begin(), v.end(), name) != v.end();
}

#if defined(__x86_64__)
// getpid through the i386 ABI (int 0x80, call 20).
long ia32_getpid() {
  long ret;
  asm volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
  return ret;
}
#endif

// Whether this kernel runs i386 system calls at all (ia32 emulation), probed once in a child
// when the test binary starts (a skip decorator's condition); without it int 0x80 ends the
// child with SIGSEGV.
bool ia32_available() {
#if defined(__x86_64__)
  static const bool yes = [] {
    pid_t pid = ::fork();
    if (pid < 0) return false;
    if (pid == 0) {
      ::signal(SIGSEGV, SIG_DFL);
      rlimit none{0, 0};
      ::setrlimit(RLIMIT_CORE, &none);
      raw_exit(ia32_getpid() > 0 ? 0 : 1);
    }
    int status = 0;
    return ::waitpid(pid, &status, 0) == pid && exited_ok(status);
  }();
  return yes;
#else
  return false;
#endif
}

}  // namespace

TEST_CASE("seccomp: every role compiles and lists its calls, sorted, never execve") {
  for (Role r : {Role::Vmm, Role::Vcpu, Role::Init}) {
    CAPTURE(jail::role_name(r));
    for (auto u : {jail::Unlisted::Kill, jail::Unlisted::Log})
      CHECK_FALSE(jail::compile(r, u).code.empty());
    auto names = jail::allowed_syscalls(r);
    CHECK(std::is_sorted(names.begin(), names.end()));
    CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
    for (const char* always : {"read", "write", "exit_group", "futex", "rt_sigreturn"})
      CHECK_MESSAGE(lists(names, always), always);
    for (const char* never : {"execve", "execveat", "ptrace", "mount", "unshare", "setns"})
      CHECK_MESSAGE(!lists(names, never), never);
  }
  auto vmm = jail::allowed_syscalls(Role::Vmm);
  for (const char* n : {"socket", "clone", "ioctl", "openat", "prlimit64", "seccomp"})
    CHECK_MESSAGE(lists(vmm, n), n);
  CHECK_FALSE(lists(vmm, "clone3"));  // refused with ENOSYS, not allowed
  auto vcpu = jail::allowed_syscalls(Role::Vcpu);
  CHECK(lists(vcpu, "ioctl"));
  for (const char* n : {"socket", "openat", "clone"}) CHECK_MESSAGE(!lists(vcpu, n), n);
  auto init = jail::allowed_syscalls(Role::Init);
  for (const char* n : {"wait4", "kill", "rt_sigtimedwait"}) CHECK_MESSAGE(lists(init, n), n);
  for (const char* n : {"ioctl", "openat", "socket", "clone"}) CHECK_MESSAGE(!lists(init, n), n);
  CHECK(std::string(jail::role_name(Role::Vmm)) == "vmm");
  CHECK(std::string(jail::role_name(Role::Vcpu)) == "vcpu");
  CHECK(std::string(jail::role_name(Role::Init)) == "init");
}

TEST_CASE("seccomp: the vcpu filter allows write and kills on socket, openat and other ioctls") {
  jail::Program p = jail::compile(Role::Vcpu);
  Pipe pipe = Pipe::make();
  int w = pipe.write.get();
  CHECK(exited_ok(status_under(p, [w] { return ::syscall(SYS_write, w, "x", 1) == 1 ? 0 : 1; })));
  char c = 0;
  CHECK(::read(pipe.read.get(), &c, 1) == 1);
  CHECK(c == 'x');
  CHECK(killed_by_sigsys(status_under(p, [] { return socket_of(AF_UNIX); })));
  CHECK(killed_by_sigsys(
      status_under(p, [] { return int(::syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY)); })));
  CHECK(killed_by_sigsys(status_under(p, [w] {
    termios t;
    ::syscall(SYS_ioctl, w, TCGETS, &t);
    return 0;
  })));
  CHECK(killed_by_sigsys(status_under(p, exec_true)));
}

TEST_CASE("seccomp: the vmm filter checks socket, clone, clone3, ioctl, prlimit64 and prctl") {
  jail::Program p = jail::compile(Role::Vmm);
  CHECK(exited_ok(status_under(p, [] { return socket_of(AF_UNIX); })));
  CHECK(killed_by_sigsys(status_under(p, [] { return socket_of(AF_INET); })));
  CHECK(killed_by_sigsys(status_under(p, [] { return socket_of(AF_INET6); })));
  CHECK(killed_by_sigsys(status_under(p, exec_true)));
  CHECK(killed_by_sigsys(status_under(p, [] {
    const char* argv[] = {"true", nullptr};
    const char* envp[] = {nullptr};
    ::syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, envp, 0);
    return 1;
  })));
  // clone3 fails with ENOSYS (unfiltered, these arguments would fail with EINVAL).
  CHECK(exited_ok(status_under(p, [] {
    errno = 0;
    long r = ::syscall(SYS_clone3, nullptr, 0);
    return r == -1 && errno == ENOSYS ? 0 : 1;
  })));
  // A plain fork through clone works; clone making a user namespace kills.
  CHECK(exited_ok(status_under(p, [] {
    long pid = ::syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) raw_exit(0);
    if (pid < 0) return 1;
    int st = 0;
    if (::syscall(SYS_wait4, pid, &st, 0, nullptr) != pid) return 2;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 3;
  })));
  for (unsigned long ns : {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET}) {
    CAPTURE(ns);
    CHECK(killed_by_sigsys(status_under(p, [ns] {
      long pid = ::syscall(SYS_clone, ns | SIGCHLD, 0, 0, 0, 0);
      if (pid == 0) raw_exit(50);
      return 51;
    })));
  }
  // ioctl: TCGETS is listed (ENOTTY on a pipe), FIONREAD is not.
  Pipe pipe = Pipe::make();
  int r = pipe.read.get();
  CHECK(exited_ok(status_under(p, [r] {
    termios t;
    return ::syscall(SYS_ioctl, r, TCGETS, &t) == -1 && errno == ENOTTY ? 0 : 1;
  })));
  CHECK(killed_by_sigsys(status_under(p, [r] {
    int n = 0;
    ::syscall(SYS_ioctl, r, FIONREAD, &n);
    return 0;
  })));
  // Limits may be read, never set.
  CHECK(exited_ok(status_under(p, [] {
    rlimit old{};
    return ::syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, nullptr, &old) == 0 ? 0 : 1;
  })));
  CHECK(killed_by_sigsys(status_under(p, [] {
    rlimit lim{16, 16};
    ::syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &lim, nullptr);
    return 0;
  })));
  CHECK(exited_ok(status_under(
      p, [] { return ::syscall(SYS_prctl, PR_SET_NAME, "jailed", 0, 0, 0) == 0 ? 0 : 1; })));
  CHECK(killed_by_sigsys(status_under(p, [] {
    ::syscall(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0);
    return 0;
  })));
  // Descriptors and files reached through them.
  CHECK(exited_ok(status_under(p, [] {
    return ::syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC) >= 0 ? 0 : 1;
  })));
}

TEST_CASE("seccomp: x32 calls kill" * doctest::skip(!test::kX86_64)) {
#if defined(__x86_64__)
  // x32 (the __X32_SYSCALL_BIT), whether or not this kernel offers the ABI.
  jail::Program p = jail::compile(Role::Vmm);
  CHECK(killed_by_sigsys(status_under(p, [] {
    ::syscall(0x40000000 | SYS_getpid);
    return 0;
  })));
#endif
}

TEST_CASE("seccomp: i386 calls kill (where this kernel runs them)" *
          doctest::skip(!ia32_available())) {
#if defined(__x86_64__)
  REQUIRE(exited_ok(status_unfiltered([] { return ia32_getpid() > 0 ? 0 : 1; })));
  jail::Program p = jail::compile(Role::Vmm);
  CHECK(killed_by_sigsys(status_under(p, [] { return ia32_getpid() > 0 ? 0 : 1; })));
#endif
}

TEST_CASE("seccomp: the init filter allows kill and wait, kills on openat and socket") {
  jail::Program p = jail::compile(Role::Init);
  CHECK(exited_ok(
      status_under(p, [] { return ::syscall(SYS_kill, ::syscall(SYS_getpid), 0) == 0 ? 0 : 1; })));
  CHECK(exited_ok(status_under(p, [] {
    int st = 0;
    return ::syscall(SYS_wait4, -1, &st, WNOHANG, nullptr) == -1 && errno == ECHILD ? 0 : 1;
  })));
  CHECK(killed_by_sigsys(
      status_under(p, [] { return int(::syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY)); })));
  CHECK(killed_by_sigsys(status_under(p, [] { return socket_of(AF_UNIX); })));
  CHECK(killed_by_sigsys(status_under(p, exec_true)));
}

TEST_CASE("seccomp: Unlisted::Log lets an unlisted call through, but never execve") {
  jail::Program p = jail::compile(Role::Init, jail::Unlisted::Log);
  CHECK(exited_ok(status_under(p, [] {
    return ::syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC) >= 0 ? 0 : 1;
  })));
  CHECK(exited_ok(status_under(p, [] { return socket_of(AF_UNIX); })));
  CHECK(killed_by_sigsys(status_under(p, exec_true)));
  CHECK(killed_by_sigsys(status_under(jail::compile(Role::Vmm, jail::Unlisted::Log), exec_true)));
}

namespace {
bool same_code(const jail::Program& a, const jail::Program& b) {
  return a.code.size() == b.code.size() &&
         std::equal(a.code.begin(), a.code.end(), b.code.begin(),
                    [](const sock_filter& x, const sock_filter& y) {
                      return x.code == y.code && x.jt == y.jt && x.jf == y.jf && x.k == y.k;
                    });
}
}  // namespace

TEST_CASE("seccomp: the built-in programs are what compile() gives; program() picks them") {
  for (Role r : {Role::Vmm, Role::Vcpu, Role::Init}) {
    CAPTURE(jail::role_name(r));
    jail::Program built_in = jail::prebuilt(r);
    CHECK(built_in.code.size() > 10);
    CHECK(same_code(built_in, jail::compile(r)));
    CHECK(same_code(jail::program(r), built_in));
    CHECK(same_code(jail::program(r, jail::Unlisted::Log), jail::compile(r, jail::Unlisted::Log)));
    CHECK_FALSE(same_code(jail::program(r, jail::Unlisted::Log), built_in));
  }
  CHECK_FALSE(same_code(jail::prebuilt(Role::Vmm), jail::prebuilt(Role::Init)));
  // The built-in init program is enforced like the compiled one.
  jail::Program init = jail::prebuilt(Role::Init);
  CHECK(exited_ok(status_under(init, [] { return ::syscall(SYS_getpid) > 0 ? 0 : 1; })));
  CHECK(killed_by_sigsys(status_under(init, [] { return socket_of(AF_UNIX); })));
  CHECK(killed_by_sigsys(status_under(jail::prebuilt(Role::Vmm), exec_true)));
}

TEST_CASE("seccomp: install() picks the program and loads it in one step") {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    rlimit none{0, 0};
    ::setrlimit(RLIMIT_CORE, &none);
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    try {
      jail::install(Role::Init);
    } catch (...) {
      raw_exit(100);
    }
    ::syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY);
    raw_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(killed_by_sigsys(status));
}

TEST_CASE("seccomp: unlisted_from_env reads SPACE_SECCOMP") {
  {
    test::ScopedEnv e("SPACE_SECCOMP", nullptr);
    CHECK(jail::unlisted_from_env() == jail::Unlisted::Kill);
  }
  {
    test::ScopedEnv e("SPACE_SECCOMP", "");
    CHECK(jail::unlisted_from_env() == jail::Unlisted::Kill);
  }
  {
    test::ScopedEnv e("SPACE_SECCOMP", "kill");
    CHECK(jail::unlisted_from_env() == jail::Unlisted::Kill);
  }
  {
    test::ScopedEnv e("SPACE_SECCOMP", "log");
    CHECK(jail::unlisted_from_env() == jail::Unlisted::Log);
  }
  for (const char* bad : {"bogus", "LOG", "allow", "log "}) {
    test::ScopedEnv e("SPACE_SECCOMP", bad);
    CHECK_THROWS_WITH_AS(jail::unlisted_from_env(),
                         doctest::Contains((std::string("SPACE_SECCOMP=") + bad).c_str()), Error);
  }
}

// A log line under the vcpu filter, in a fresh process: the first gmtime_r() of a process opens
// /etc/localtime, which killed jailed VMMs at their first warning (a full disk). This test runs
// itself again (so that nothing has loaded the time zone yet), loads the filter first, logs,
// says "logged" on descriptor 3 and must exit 0.
TEST_CASE("seccomp: a log line under the vcpu filter in a fresh process") {
  static constexpr const char* kName =
      "seccomp: a log line under the vcpu filter in a fresh process";
  if (std::getenv("SPACE_TEST_LOG_UNDER_SECCOMP")) {
    Fd null(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    jail::Program p = jail::compile(Role::Vcpu);
    if (jail::load(p) != 0) raw_exit(100);
    log::configure(log::Level::Warn, log::Format::Text, null.get());
    log::write(log::Level::Warn, "a warning from a vCPU thread");
    raw_exit(::write(3, "logged", 6) == 6 ? 0 : 1);
  }
  Pipe pipe = Pipe::make();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setenv("SPACE_TEST_LOG_UNDER_SECCOMP", "1", 1);
    std::string filter = std::string("--test-case=") + kName;
    const char* argv[] = {"unit_tests", filter.c_str(), nullptr};
    int out = ::open("/dev/null", O_WRONLY);
    ::dup2(out, 1);
    ::dup2(pipe.write.get(), 3);
    ::execv("/proc/self/exe", const_cast<char**>(argv));
    raw_exit(127);
  }
  pipe.write.reset();
  char buf[16] = {};
  ssize_t n = ::read(pipe.read.get(), buf, sizeof buf);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK_MESSAGE(exited_ok(status), "the child ended with status "
                                       << status << " (signal 31 is SIGSYS: killed by its filter)");
  CHECK(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0) == "logged");
}

// A branch child stacks signal_self_only on the Vmm filter it inherited: it signals itself (and
// its threads, as vCPU kicks do) but no other process of its uid, such as its source VMM.
TEST_CASE("seccomp: signal_self_only, stacked on the vmm filter, signals only the process itself") {
  jail::Program vmm = jail::compile(Role::Vmm);
  const pid_t parent = ::getpid();
  int status = status_under(vmm, [parent] {
    const long self = ::syscall(SYS_getpid), tid = ::syscall(SYS_gettid);
    if (jail::load(jail::signal_self_only(static_cast<pid_t>(self))) != 0) return 10;
    if (::syscall(SYS_kill, self, 0) != 0) return 11;         // itself
    if (::syscall(SYS_tgkill, self, tid, 0) != 0) return 12;  // its own thread
    errno = 0;
    if (::syscall(SYS_kill, parent, 0) != -1 || errno != EPERM) return 13;  // the "source"
    errno = 0;
    if (::syscall(SYS_tgkill, parent, parent, 0) != -1 || errno != EPERM) return 14;
    errno = 0;
    if (::syscall(SYS_kill, -1, SIGKILL) != -1 || errno != EPERM) return 15;  // everyone
    errno = 0;
    if (::syscall(SYS_kill, 0, 0) != -1 || errno != EPERM) return 16;  // its process group
    return 0;
  });
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // Without it, the Vmm filter alone lets the child signal its parent (same uid): the hole.
  status = status_under(vmm, [parent] { return ::syscall(SYS_kill, parent, 0) == 0 ? 0 : 1; });
  CHECK(exited_ok(status));
}
