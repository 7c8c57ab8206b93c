// A helper program in namespaces of its own; see contained.h. clone3 makes the init directly in
// the new pid namespace, so the pidfd we hold is the namespace's pid 1: killing it takes the whole
// tree, and reaping it returns only once every process in the namespace is gone. Between clone
// and exec only async-signal-safe calls run, on memory prepared before the clone.
#include "image/contained.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "util/error.h"
#include "util/fd.h"
#include "util/reap.h"

namespace space::image {
namespace {

// struct clone_args, version 0 (64 bytes), spelled out to avoid <linux/sched.h>'s clashes.
struct CloneArgs {
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

// Writes "space: <what> failed (errno N)\n" to fd 1; async-signal-safe.
void child_error(const char* what) {
  int err = errno;
  char num[16];
  int n = 0;
  do num[n++] = char('0' + err % 10), err /= 10;
  while (err > 0 && n < 15);
  char msg[256];
  size_t len = 0;
  auto put = [&](const char* s, size_t k) {
    for (size_t i = 0; i < k && len < sizeof msg; i++) msg[len++] = s[i];
  };
  put("space: ", 7);
  put(what, std::strlen(what));
  put(" failed (errno ", 15);
  while (n > 0 && len < sizeof msg) msg[len++] = num[--n];
  put(")\n", 2);
  (void)!::write(1, msg, len);
}

// The namespace's pid 1: the stdio is already set up. Starts the program, reaps whatever is
// reparented to it, and exits with the program's status when it exits.
[[noreturn]] void contained_init(char* const* argv, char* const* envp) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::setsid();
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    child_error("making the mounts private");
    ::_exit(125);
  }
  // A /proc that shows this pid namespace (mmdebstrap mounts its own in the chroot).
  ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  pid_t pid = static_cast<pid_t>(::syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0));
  if (pid < 0) {
    child_error("fork");
    ::_exit(125);
  }
  if (pid == 0) {
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::execve(argv[0], argv, envp);
    child_error("execve");
    ::_exit(127);
  }
  int status = proc::wait_reaping_others(pid);
  ::_exit(status < 0 ? 125 : proc::exit_code_of(status));
}

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

int run_contained(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  int log_fd, proc::SignalGuard& sig,
                  const std::function<void(std::string_view)>& on_line) {
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/') fail("run: argv[0] is not absolute");
  std::vector<char*> args = c_strings(argv), envp = c_strings(env);
  Fd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null_fd) throw_errno("open /dev/null");
  Pipe out = Pipe::make();

  CloneArgs ca{};
  ca.flags = CLONE_NEWNS | CLONE_NEWPID;
  ca.exit_signal = SIGCHLD;
  pid_t pid = static_cast<pid_t>(::syscall(SYS_clone3, &ca, sizeof ca));
  if (pid < 0) {
    int err = errno;
    if (err == EPERM)
      throw Error("start " + argv[0] + " in namespaces of its own: " + std::strerror(err), err,
                  "run it as root (it needs CAP_SYS_ADMIN)");
    throw_errno("start " + argv[0] + " in namespaces of its own", err);
  }
  if (pid == 0) {
    if (::dup2(null_fd.get(), 0) < 0 || ::dup2(out.write.get(), 1) < 0 ||
        ::dup2(out.write.get(), 2) < 0)
      ::_exit(125);
    ::close_range(3, ~0U, 0);
    contained_init(args.data(), envp.data());
  }
  proc::Child init(pid);
  out.write.reset();

  std::string partial;
  char buf[16384];
  for (;;) {
    pollfd fds[2] = {{out.read.get(), POLLIN, 0}, {sig.fd(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw_errno("poll");
    }
    if (fds[1].revents) sig.check();  // throws; ~Child kills the init, the kernel the rest
    if (!fds[0].revents) continue;
    ssize_t n = ::read(out.read.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("read the output of " + argv[0]);
    if (n == 0) break;
    write_all(log_fd, buf, size_t(n));
    partial.append(buf, size_t(n));
    size_t start = 0, nl = 0;
    while ((nl = partial.find('\n', start)) != std::string::npos) {
      std::string_view line(partial.data() + start, nl - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (on_line) on_line(line);
      start = nl + 1;
    }
    partial.erase(0, start);
  }
  if (!partial.empty() && on_line) on_line(partial);
  int status = init.wait();
  return proc::exit_code_of(status);
}

}  // namespace space::image
