// Process identity and children; see process.h. pidfds come from the raw syscalls because this
// glibc has no wrappers for them.
#include "util/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "util/error.h"
#include "util/fs.h"
#include "util/procfs.h"

namespace space::proc {

namespace {

int pidfd_open(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

}  // namespace

namespace {

// Tells the kernel where the argument and environment strings now lie, with PR_SET_MM_MAP (which,
// unlike PR_SET_MM's single fields, needs no CAP_SYS_RESOURCE): the other fields as they are.
int set_string_bounds(const std::vector<std::string>& f, unsigned long arg_end,
                      unsigned long env_start, unsigned long env_end) {
  // /proc/self/stat: 26 start_code, 27 end_code, 28 start_stack, 45 start_data, 46 end_data,
  // 47 start_brk, 48 arg_start.
  prctl_mm_map m{};
  const std::pair<size_t, __u64*> fields[] = {
      {26, &m.start_code}, {27, &m.end_code},  {28, &m.start_stack}, {45, &m.start_data},
      {46, &m.end_data},   {47, &m.start_brk}, {48, &m.arg_start}};
  for (auto [n, field] : fields) {
    auto v = stat_number(f, n);
    if (!v) return ENOTSUP;
    *field = *v;
  }
  m.brk = static_cast<uint64_t>(::syscall(SYS_brk, 0));  // the break as it is now
  m.arg_end = arg_end;
  m.env_start = env_start;
  m.env_end = env_end;
  m.exe_fd = static_cast<uint32_t>(-1);  // unchanged, as is the auxiliary vector (no auxv)
  return ::prctl(PR_SET_MM, PR_SET_MM_MAP, &m, sizeof m, 0) == 0 ? 0 : errno;
}

}  // namespace

int set_process_strings(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  // Fields 48 to 51 of /proc/self/stat: where the argument and environment strings lie.
  auto f = stat_fields("self");
  auto a_start = stat_number(f, 48), a_end = stat_number(f, 49);
  auto e_start = stat_number(f, 50), e_end = stat_number(f, 51);
  if (!a_start || !a_end || !e_start || !e_end) return ENOTSUP;
  const unsigned long arg_start = *a_start, arg_end = *a_end;
  const unsigned long env_start = *e_start, env_end = *e_end;
  if (arg_start == 0 || arg_end <= arg_start || args.empty()) return EINVAL;
  std::string arg_text, env_text;
  for (const auto& a : args) arg_text.append(a).push_back('\0');
  for (const auto& e : env) {
    if (e.find('=') == std::string::npos || e.front() == '=') return EINVAL;
    env_text.append(e).push_back('\0');
  }
  // The new environment for getenv() first (setenv copies), so that nothing refers to the old
  // strings, which are about to be overwritten.
  ::clearenv();
  for (const auto& e : env) {
    size_t eq = e.find('=');
    if (::setenv(e.substr(0, eq).c_str(), e.c_str() + eq + 1, 1) != 0) return errno;
  }
  // The room: the argument strings, and the environment strings after them, where an exec
  // puts them.
  const unsigned long end = env_start == arg_end && env_end > env_start ? env_end : arg_end;
  const size_t room = end - arg_start;
  char* area = reinterpret_cast<char*>(arg_start);
  auto write_area = [&](std::string text) {
    if (text.size() > room) {  // truncated to the room, still ending in a NUL
      text.resize(room - 1);
      text.push_back('\0');
    }
    std::memcpy(area, text.data(), text.size());
    std::memset(area + text.size(), 0, room - text.size());
    return text.size();
  };
  if (arg_text.size() + env_text.size() > room) {
    // No room for both: the arguments alone, and environ shows nothing.
    size_t n = write_area(arg_text);
    return set_string_bounds(f, arg_start + n, arg_start + n, arg_start + n);
  }
  write_area(arg_text + env_text);
  const unsigned long new_arg_end = arg_start + arg_text.size();
  if (int err = set_string_bounds(f, new_arg_end, new_arg_end, new_arg_end + env_text.size())) {
    // The kernel keeps the old bounds: the arguments alone again, none of the old strings.
    write_area(arg_text);
    return err;
  }
  return 0;
}

std::optional<ProcessRef> ProcessRef::open(pid_t pid, uint64_t start) {
  if (pid <= 0) return std::nullopt;
  // Open first, verify second: if the start time still matches after the pidfd exists, the
  // pidfd refers to the process we mean (the pid cannot have been recycled in between).
  Fd fd(pidfd_open(pid));
  if (!fd) {
    if (errno == ESRCH) return std::nullopt;
    throw_errno("pidfd_open " + std::to_string(pid));
  }
  if (!is_alive(pid, start)) return std::nullopt;
  return ProcessRef(pid, std::move(fd));
}

bool ProcessRef::signal(int sig) const {
  if (::syscall(SYS_pidfd_send_signal, fd_.get(), sig, nullptr, 0) == 0) return true;
  if (errno == ESRCH) return false;
  throw_errno("signal process " + std::to_string(pid_));
}

bool ProcessRef::wait_exit(int timeout_ms) const {
  pollfd p{fd_.get(), POLLIN, 0};
  for (;;) {
    int r = ::poll(&p, 1, timeout_ms);
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) throw_errno("poll pidfd");
  }
}

Child::Child(pid_t pid) : pid_(pid), pidfd_(pidfd_open(pid)) {
  if (!pidfd_) {
    int err = errno;
    kill_and_reap();
    throw_errno("pidfd_open child " + std::to_string(pid), err);
  }
}

Child::Child(Child&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      pidfd_(std::move(o.pidfd_)),
      reaped_(o.reaped_),
      status_(o.status_) {}

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    kill_and_reap();
    pid_ = std::exchange(o.pid_, -1);
    pidfd_ = std::move(o.pidfd_);
    reaped_ = o.reaped_;
    status_ = o.status_;
  }
  return *this;
}

Child::~Child() {
  kill_and_reap();
}

void Child::kill_and_reap() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  pid_ = -1;
}

bool Child::exited() {
  if (reaped_) return true;
  if (pid_ <= 0) return false;
  pid_t r = ::waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  return reaped_;
}

int Child::wait() {
  if (pid_ <= 0 && !reaped_) fail("wait: no child");
  while (!reaped_) {
    pid_t r = ::waitpid(pid_, &status_, 0);
    if (r == pid_)
      reaped_ = true;
    else if (errno != EINTR)
      throw_errno("waitpid " + std::to_string(pid_));
  }
  return status_;
}

bool RunResult::ok() const {
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

RunResult run(const std::vector<std::string>& argv, int output_fd, bool dies_with_caller) {
  if (argv.empty()) fail("run: empty argv");
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  Pipe out = Pipe::make();
  const int to = output_fd >= 0 ? output_fd : out.write.get();
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {
    // The death signal is set after the fork: the caller may already have died, hence the check.
    if (dies_with_caller && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent))
      ::_exit(127);
    int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(to, 1) < 0 || ::dup2(to, 2) < 0)
      ::_exit(127);
    ::close_range(3, ~0U, 0);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  Child child(pid);
  out.write.reset();
  RunResult r;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(out.read.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    r.output.append(buf, static_cast<size_t>(n));
    if (r.output.size() > (64u << 10)) r.output.erase(0, r.output.size() - (64u << 10));
  }
  r.status = child.wait();
  return r;
}

std::string find_program(const std::string& name) {
  const char* env = std::getenv("PATH");
  std::string dirs = std::string(env ? env : "") + ":/usr/sbin:/sbin:/usr/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    std::string dir = dirs.substr(start, colon - start);
    start = colon + 1;
    if (dir.empty() || dir[0] != '/') continue;
    std::string path = dir + "/" + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

pid_t Child::release() {
  pidfd_.reset();
  return std::exchange(pid_, -1);
}

namespace {

// The file actions and attributes of a posix_spawn, destroyed with it.
struct SpawnPlan {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnPlan() {
    if (posix_spawn_file_actions_init(&actions) != 0) fail("spawn: posix_spawn_file_actions_init");
    if (posix_spawnattr_init(&attr) != 0) {
      posix_spawn_file_actions_destroy(&actions);
      fail("spawn: posix_spawnattr_init");
    }
  }
  ~SpawnPlan() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnPlan(const SpawnPlan&) = delete;
  SpawnPlan& operator=(const SpawnPlan&) = delete;
};

// How an init starts its program (SpawnOptions::init): posix_spawn, whose vfork-like clone copies
// none of our memory, leaving the program fds 0 to first_closed - 1 and an empty signal mask.
struct ProgramSpawn : SpawnPlan {
  ProgramSpawn(int first_closed, const sigset_t& mask) {
    if (posix_spawn_file_actions_addclosefrom_np(&actions, first_closed) != 0 ||
        posix_spawnattr_setsigmask(&attr, &mask) != 0 ||
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK) != 0)
      fail("spawn: cannot prepare posix_spawn");
  }
};

// argv and the environment as execve() takes them (pointers into the strings given, which
// must outlive it), made before any clone.
struct ExecArgs {
  std::vector<char*> argv;
  std::vector<char*> envp;  // empty: our environment
  ExecArgs(const std::vector<std::string>& args,
           const std::optional<std::vector<std::string>>& env) {
    if (args.empty()) fail("spawn: empty argv");
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (env) {
      for (auto& e : *env) envp.push_back(const_cast<char*>(e.c_str()));
      envp.push_back(nullptr);
    }
  }
  char* const* environment() const { return envp.empty() ? environ : envp.data(); }
};

// spawn_detached in a new PID namespace (with an init or without): see process.h.
Child spawn_cloned(const ExecArgs& exec, const std::string& log_path, const SpawnOptions& opts) {
  // Everything the child touches is prepared before the clone: it may only make async-signal-safe
  // calls.
  char* const* args = exec.argv.data();
  char* const* env = exec.environment();
  const char* log = log_path.c_str();
  const int nfds = static_cast<int>(opts.fds.size());
  const int* fds = opts.fds.data();
  if (opts.init && (!opts.new_pid_namespace || opts.init_fds > opts.fds.size()))
    fail("spawn: an init needs a new PID namespace and fds of its own among the passed ones");
  const int program_nfds = nfds - static_cast<int>(opts.init ? opts.init_fds : 0);
  sigset_t empty;
  sigemptyset(&empty);
  unsigned long flags = SIGCHLD | (opts.new_pid_namespace ? CLONE_NEWPID : 0);
  std::optional<ProgramSpawn> program_spawn;
  if (opts.init) program_spawn.emplace(3 + program_nfds, empty);

  // clone() rather than fork(): only it can put the child in a new PID namespace. Without
  // CLONE_VM it returns twice on the same stack, as fork() does.
  pid_t pid = static_cast<pid_t>(::syscall(SYS_clone, flags, nullptr, nullptr, nullptr, 0));
  if (pid < 0) throw_errno(opts.new_pid_namespace ? "clone a new PID namespace" : "fork");
  if (pid == 0) {
    auto die = [nfds](const char* msg) {
      if (nfds > 0) {
        ssize_t r = ::write(3, msg, std::strlen(msg));
        (void)r;
      }
      ::_exit(127);
    };
    // Move each passed fd above the target numbers first, then into place: a passed fd may sit
    // on another's target.
    int moved[16];
    if (nfds > 16) ::_exit(127);
    for (int i = 0; i < nfds; i++) {
      moved[i] = ::fcntl(fds[i], F_DUPFD_CLOEXEC, 3 + nfds);
      if (moved[i] < 0) ::_exit(127);
    }
    for (int i = 0; i < nfds; i++)
      if (::dup2(moved[i], 3 + i) < 0) ::_exit(127);  // dup2 leaves the new fd without CLOEXEC
    if (::setsid() < 0) die("error: setsid failed\n");
    int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd < 0) die("error: open /dev/null failed\n");
    int log_fd = ::open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (log_fd < 0) die("error: open log file failed\n");
    if (::dup2(null_fd, 0) < 0 || ::dup2(log_fd, 1) < 0 || ::dup2(log_fd, 2) < 0)
      die("error: redirect stdio failed\n");
    ::close_range(3 + nfds, ~0U, 0);
    if (!opts.init) {
      ::sigprocmask(SIG_SETMASK, &empty, nullptr);
      ::execve(args[0], args, env);
      die("error: exec failed\n");
    }
    // PID 1 of the new namespace: start the program as PID 2, then serve as its init.
    pid_t program = -1;
    if (posix_spawn(&program, args[0], &program_spawn->actions, &program_spawn->attr, args, env) !=
        0)
      die("error: exec failed\n");
    if (program_nfds > 0) ::close_range(3, 3 + program_nfds - 1, 0);  // the program's, not ours
    opts.init(program, 3 + program_nfds);
    ::_exit(127);
  }
  return Child(pid);
}

// spawn_detached without an init: see process.h.
Child spawn_plain(const ExecArgs& exec, const std::string& log_path, const SpawnOptions& opts) {
  const int nfds = static_cast<int>(opts.fds.size());
  // Each passed fd is first copied above every target number (close-on-exec), so that the
  // dup2s below cannot overwrite one another's source.
  std::vector<Fd> high;
  for (int fd : opts.fds) {
    high.emplace_back(::fcntl(fd, F_DUPFD_CLOEXEC, 3 + nfds));
    if (!high.back()) throw_errno("spawn: dup fd " + std::to_string(fd));
  }
  SpawnPlan plan;
  sigset_t empty;
  sigemptyset(&empty);
  int err = posix_spawn_file_actions_addopen(&plan.actions, 0, "/dev/null", O_RDWR, 0);
  if (!err)
    err = posix_spawn_file_actions_addopen(&plan.actions, 1, log_path.c_str(),
                                           O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (!err) err = posix_spawn_file_actions_adddup2(&plan.actions, 1, 2);
  for (int i = 0; i < nfds && !err; i++)  // dup2 leaves the new fd without close-on-exec
    err = posix_spawn_file_actions_adddup2(&plan.actions, high[i].get(), 3 + i);
  if (!err) err = posix_spawn_file_actions_addclosefrom_np(&plan.actions, 3 + nfds);
  if (!err) err = posix_spawnattr_setsigmask(&plan.attr, &empty);
  if (!err) err = posix_spawnattr_setflags(&plan.attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
  if (err) throw Error("spawn: cannot prepare posix_spawn", err);
  pid_t pid = -1;
  err = posix_spawn(&pid, exec.argv[0], &plan.actions, &plan.attr, exec.argv.data(),
                    exec.environment());
  if (err)
    throw Error(
        "start " + std::string(exec.argv[0]) + " (log " + log_path + "): " + std::strerror(err),
        err);
  return Child(pid);
}

}  // namespace

Child spawn_detached(const std::vector<std::string>& argv, const std::string& log_path,
                     const SpawnOptions& opts) {
  const ExecArgs exec(argv, opts.env);
  if (opts.init || opts.new_pid_namespace) return spawn_cloned(exec, log_path, opts);
  return spawn_plain(exec, log_path, opts);
}

Child spawn_detached(const std::vector<std::string>& argv, const std::string& log_path,
                     int pass_fd) {
  SpawnOptions o;
  if (pass_fd >= 0) o.fds.push_back(pass_fd);
  return spawn_detached(argv, log_path, o);
}

SignalGuard::SignalGuard(std::initializer_list<int> extra) : SignalGuard(std::vector<int>(extra)) {}

SignalGuard::SignalGuard(const std::vector<int>& extra) {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGHUP);
  for (int s : extra) sigaddset(&set_, s);
  if (::sigprocmask(SIG_BLOCK, &set_, &old_) != 0) throw_errno("sigprocmask");
  fd_ = Fd(::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd_) {
    int err = errno;
    ::sigprocmask(SIG_SETMASK, &old_, nullptr);
    throw_errno("signalfd", err);
  }
}

SignalGuard::~SignalGuard() {
  fd_.reset();
  ::sigprocmask(SIG_SETMASK, &old_, nullptr);
}

int SignalGuard::take() {
  signalfd_siginfo si{};
  ssize_t n = ::read(fd_.get(), &si, sizeof si);
  return n == static_cast<ssize_t>(sizeof si) ? static_cast<int>(si.ssi_signo) : 0;
}

void SignalGuard::check() {
  if (int sig = take()) fail("interrupted by " + signal_name(sig));
}

std::string signal_name(int sig) {
  const char* name = ::sigabbrev_np(sig);
  return name ? std::string("SIG") + name : "signal " + std::to_string(sig);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + signal_name(sig) + ")";
  }
  return "stopped (status " + std::to_string(status) + ")";
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace space::proc
