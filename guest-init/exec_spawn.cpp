// spawn_exec: preparation in the parent, then a vfork-style child that makes only syscalls.
#include "exec_spawn.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "passwd.h"
#include "signals.h"
#include "util/open_resolved.h"
#include "util/wipe.h"

namespace space::guest {

namespace {
// Whether clone() takes CLONE_PIDFD here: gVisor's kernel refuses it with EINVAL, and the first
// refusal switches every later spawn to an eventfd the reaper signals.
std::atomic<bool> clone_gives_pidfd{true};
}  // namespace

namespace {

constexpr size_t kChildStack = 64 * 1024;

enum Step : int {
  kNone,
  kSession,
  kCtty,
  kStdio,
  kRoot,
  kChdir,
  kRlimit,
  kGroups,
  kGid,
  kUid,
  kExec
};

// Shared with the child (CLONE_VM): inputs, then the failing step and errno if it fails.
struct ChildArgs {
  char* const* argv;
  char* const* envp;
  const char* path;  // PATH to search, or nullptr when argv[0] contains '/'
  const char* cwd;   // nullptr: stay in guest-init's cwd (/)
  int root_fd;       // -1, or the directory to chroot into
  int fds[3];        // become 0, 1, 2
  bool tty;
  bool set_ids;
  uid_t uid;
  gid_t gid;
  const gid_t* groups;  // gid first, then the supplementary groups
  size_t ngroups;
  int umask;  // -1: leave it
  const proto::ExecRequest::Rlimit* rlimits;
  size_t nrlimits;
  int step = kNone;
  int failed_rlimit = 0;
  int err = 0;
};

[[noreturn]] void child_fail(ChildArgs* a, int step) noexcept {
  a->step = step;
  a->err = errno;
  ::_exit(127);
}

// execve through `path` like execvp: EACCES anywhere wins over ENOENT; other errors stop.
[[noreturn]] void child_exec(ChildArgs* a) noexcept {
  const char* file = a->argv[0];
  if (!a->path) {
    ::execve(file, a->argv, a->envp);
    child_fail(a, kExec);
  }
  const size_t flen = std::strlen(file);
  bool eacces = false;
  char buf[PATH_MAX];
  for (const char* p = a->path;;) {
    const char* end = ::strchrnul(p, ':');
    size_t dlen = static_cast<size_t>(end - p);
    if (dlen == 0) {  // an empty entry is the cwd
      buf[0] = '.';
      dlen = 1;
    } else if (dlen < sizeof buf) {
      std::memcpy(buf, p, dlen);
    }
    if (dlen + 1 + flen < sizeof buf) {
      buf[dlen] = '/';
      std::memcpy(buf + dlen + 1, file, flen + 1);
      ::execve(buf, a->argv, a->envp);
      switch (errno) {
        case EACCES:
          eacces = true;
          break;
        case ENOENT:
        case ENOTDIR:
        case ESTALE:
        case ENODEV:
        case ETIMEDOUT:
          break;
        default:
          child_fail(a, kExec);
      }
    }
    if (*end == '\0') break;
    p = end + 1;
  }
  errno = eacces ? EACCES : ENOENT;
  child_fail(a, kExec);
}

int child_main(void* arg) noexcept {
  auto* a = static_cast<ChildArgs*>(arg);
  reset_signals_in_child();
  if (a->tty) {
    if (::setsid() < 0) child_fail(a, kSession);
    if (::ioctl(a->fds[0], TIOCSCTTY, 0) < 0) child_fail(a, kCtty);
  } else if (::setpgid(0, 0) < 0) {
    child_fail(a, kSession);
  }
  for (int i = 0; i < 3; i++) {
    int r = a->fds[i] == i ? ::fcntl(i, F_SETFD, 0) : ::dup2(a->fds[i], i);
    if (r < 0) child_fail(a, kStdio);
  }
  if (a->root_fd >= 0 && (::fchdir(a->root_fd) < 0 || ::chroot(".") < 0)) child_fail(a, kRoot);
  if (a->cwd && ::chdir(a->cwd) < 0) child_fail(a, kChdir);
  for (size_t i = 0; i < a->nrlimits; i++) {
    struct rlimit64 {
      uint64_t cur, max;
    } rl{a->rlimits[i].soft, a->rlimits[i].hard};
    a->failed_rlimit = static_cast<int>(a->rlimits[i].resource);
    if (::syscall(SYS_prlimit64, 0, a->rlimits[i].resource, &rl, nullptr) < 0)
      child_fail(a, kRlimit);
  }
  if (a->umask >= 0) ::syscall(SYS_umask, a->umask);
  if (a->set_ids) {
    if (::syscall(SYS_setgroups, a->ngroups, a->groups) < 0) child_fail(a, kGroups);
    if (::syscall(SYS_setresgid, a->gid, a->gid, a->gid) < 0) child_fail(a, kGid);
    if (::syscall(SYS_setresuid, a->uid, a->uid, a->uid) < 0) child_fail(a, kUid);
  }
  child_exec(a);
}

[[noreturn]] void spawn_fail(const std::string& what, int err) {
  throw SpawnFailed{proto::ExitKind::CannotExecute, err, what + ": " + std::strerror(err)};
}

// An fd at 3 or above (the child dup2s onto 0-2, so ours must not sit there).
Fd above_stdio(Fd fd) {
  if (fd.get() > 2) return fd;
  int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (moved < 0) spawn_fail("fcntl", errno);
  return Fd(moved);
}

struct PipePair {
  Fd read, write;
};

PipePair make_pipe() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) spawn_fail("pipe", errno);
  PipePair pp{Fd(p[0]), Fd(p[1])};
  pp.read = above_stdio(std::move(pp.read));
  pp.write = above_stdio(std::move(pp.write));
  return pp;
}

// Wipes every string it watches when it goes out of scope, on every path out of spawn_exec.
struct WipeOnExit {
  std::vector<std::string>* a = nullptr;
  std::vector<std::string>* b = nullptr;
  ~WipeOnExit() {
    for (auto* v : {a, b})
      if (v)
        for (auto& s : *v) space::wipe(s);
  }
};

// guest-init's environment, then the user's HOME/USER/LOGNAME (when the exec names a user, or
// runs in an image), then the request's entries, then the secrets'.
std::vector<std::string> build_env(const proto::ExecRequest& req, bool named_user,
                                   const std::optional<PasswdEntry>& pw,
                                   const std::vector<std::string>* secret_env) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  auto set = [&env](std::string kv) {
    size_t klen = kv.find('=') + 1;
    for (auto& e : env)
      if (e.compare(0, klen, kv, 0, klen) == 0) {
        e = std::move(kv);
        return;
      }
    env.push_back(std::move(kv));
  };
  if (named_user) {
    set("HOME=" + (pw ? pw->home : std::string("/")));
    if (pw) {
      set("USER=" + pw->name);
      set("LOGNAME=" + pw->name);
    }
  }
  for (const auto& e : req.env) set(e);
  if (secret_env) {
    env.reserve(env.size() + secret_env->size());  // no reallocation that would leave copies
    for (const auto& e : *secret_env) set(e);
  }
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::string describe(const ChildArgs& a, const proto::ExecRequest& req) {
  switch (a.step) {
    case kSession:
      return "setsid";
    case kCtty:
      return "set the controlling terminal";
    case kStdio:
      return "dup2";
    case kRoot:
      return "enter the image's root";
    case kChdir:
      return "chdir " + (req.cwd.empty() ? std::string("/") : req.cwd);
    case kRlimit:
      return "setrlimit " + std::to_string(a.failed_rlimit);
    case kGroups:
      return "setgroups";
    case kGid:
      return "setgid " + std::to_string(a.gid);
    case kUid:
      return "setuid " + std::to_string(a.uid);
    default:
      return "exec " + req.argv[0];
  }
}

}  // namespace

std::string read_small_file(int root_fd, const char* path) {
  std::string out;
  Fd fd;
  if (root_fd < 0) {
    fd = Fd(::open((std::string("/") + path).c_str(), O_RDONLY | O_CLOEXEC));
  } else {
    fd = Fd(open_resolved(root_fd, path, O_RDONLY | O_NONBLOCK,
                          RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS));
    struct stat st {};
    if (fd && (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))) fd.reset();
  }
  if (!fd) return out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0 && out.size() < (1u << 20))
    out.append(buf, static_cast<size_t>(n));
  return out;
}

namespace {

// Who the process runs as: -u NAME[:GROUP] through the root's passwd and group files, or the
// request's numeric ids; with the passwd entry for its HOME and groups.
struct Identity {
  std::optional<uint32_t> uid, gid;
  std::optional<PasswdEntry> pw;
};

Identity resolve_identity(const proto::ExecRequest& req, int root_fd) {
  Identity id{req.uid, req.gid, std::nullopt};
  if (!req.user.empty()) {
    ResolvedUser u = resolve_user(req.user, read_small_file(root_fd, "etc/passwd"),
                                  read_small_file(root_fd, "etc/group"));
    if (!u.error.empty())
      throw SpawnFailed{proto::ExitKind::CannotExecute, ESRCH, "-u " + req.user + ": " + u.error};
    id.uid = u.uid;
    id.gid = u.gid;
    id.pw = std::move(u.pw);
  } else if (id.uid || root_fd >= 0) {  // in an image, root gets the image's HOME for root
    id.pw = find_passwd_uid(read_small_file(root_fd, "etc/passwd"), id.uid.value_or(0));
  }
  return id;
}

// A terminal for the process: its master in `master` (non-blocking), its peer returned.
Fd open_terminal(const proto::ExecRequest& req, Fd& master) {
  master = Fd(::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK));
  if (!master) spawn_fail("open /dev/ptmx", errno);
  int unlock = 0;
  if (::ioctl(master.get(), TIOCSPTLCK, &unlock) != 0) spawn_fail("unlock the pty", errno);
  winsize ws{req.rows, req.cols, 0, 0};
  if (req.rows && req.cols) ::ioctl(master.get(), TIOCSWINSZ, &ws);
  Fd slave(::ioctl(master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave && (errno == ENOTTY || errno == EINVAL)) {
    // No TIOCGPTPEER (gVisor's kernel): the peer by its number, in /dev/pts (devpts).
    unsigned n = 0;
    if (::ioctl(master.get(), TIOCGPTN, &n) != 0) spawn_fail("number of the pty", errno);
    slave = Fd(::open(("/dev/pts/" + std::to_string(n)).c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC));
  }
  if (!slave) spawn_fail("open the pty", errno);
  return above_stdio(std::move(slave));
}

// Starts the child on `stack_top` (CLONE_VM | CLONE_VFORK: this thread waits while it runs
// until its exec) with `on_exit` for the reaper. The pidfd goes to `pidfd`; where clone gives
// none (gVisor), an eventfd the reaper signals goes to `exit_event`. -1 with errno on failure.
pid_t clone_child(Reaper& reaper, Reaper::ExitFn on_exit, ChildArgs& a, char* stack_top, int& pidfd,
                  Fd& exit_event) {
  auto attempt = [&](Reaper::ExitFn fn) {
    const bool with_pidfd = clone_gives_pidfd.load();
    if (!with_pidfd) {
      exit_event = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
      if (!exit_event) spawn_fail("eventfd", errno);
      fn = [inner = std::move(fn), efd = exit_event.get()](pid_t p, int status) {
        inner(p, status);
        uint64_t one = 1;
        ssize_t w = ::write(efd, &one, sizeof one);
        (void)w;
      };
    }
    return reaper.spawn(
        [&]() -> pid_t {
          return ::clone(child_main, stack_top,
                         CLONE_VM | CLONE_VFORK | (with_pidfd ? CLONE_PIDFD : 0) | SIGCHLD, &a,
                         &pidfd);
        },
        std::move(fn));
  };
  pid_t pid = attempt(on_exit);
  if (pid < 0 && errno == EINVAL && clone_gives_pidfd.exchange(false)) pid = attempt(on_exit);
  return pid;
}

}  // namespace

Spawned spawn_exec(const proto::ExecRequest& req, Reaper& reaper, Reaper::ExitFn on_exit,
                   std::vector<std::string>* secret_env, int root_fd) {
  WipeOnExit wipe_secrets{secret_env, nullptr};
  Identity who = resolve_identity(req, root_fd);
  std::optional<PasswdEntry>& pw = who.pw;
  std::optional<uint32_t> uid = who.uid, gid = who.gid;
  std::vector<std::string> env = build_env(req, uid || root_fd >= 0, pw, secret_env);
  WipeOnExit wipe_env{secret_env ? &env : nullptr, nullptr};
  std::vector<std::string> args = req.argv;
  std::vector<char*> argv = c_strings(args), envp = c_strings(env);
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const auto& e : env)
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);

  ChildArgs a{};
  a.argv = argv.data();
  a.envp = envp.data();
  a.path = req.argv[0].find('/') == std::string::npos ? path.c_str() : nullptr;
  // After a chroot the cwd is outside the new root until a chdir: always make one there.
  a.cwd = !req.cwd.empty() && req.cwd != "/" ? req.cwd.c_str() : root_fd >= 0 ? "/" : nullptr;
  a.root_fd = root_fd;
  a.tty = req.tty;
  a.set_ids = uid || gid || !req.groups.empty();
  a.uid = uid.value_or(0);
  a.gid = gid ? *gid : pw ? pw->gid : a.uid;
  std::vector<gid_t> groups{a.gid};
  groups.insert(groups.end(), req.groups.begin(), req.groups.end());
  a.groups = groups.data();
  a.ngroups = groups.size();
  a.umask = req.umask ? static_cast<int>(*req.umask) : -1;
  a.rlimits = req.rlimits.data();
  a.nrlimits = req.rlimits.size();

  Spawned s;
  Fd slave;
  PipePair in, out, err;
  if (req.tty) {
    slave = open_terminal(req, s.master);
    a.fds[0] = a.fds[1] = a.fds[2] = slave.get();
  } else {
    in = make_pipe();
    out = make_pipe();
    err = make_pipe();
    if (req.with_stdin) {
      if (::fcntl(in.write.get(), F_SETFL, O_WRONLY | O_NONBLOCK) != 0) spawn_fail("fcntl", errno);
      s.in = std::move(in.write);
    } else {
      in.write.reset();  // stdin at EOF from the start
    }
    a.fds[0] = in.read.get();
    a.fds[1] = out.write.get();
    a.fds[2] = err.write.get();
  }

  // The child runs on this buffer while this thread is suspended (CLONE_VFORK).
  auto stack = std::make_unique_for_overwrite<char[]>(kChildStack);
  int pidfd = -1;
  Fd exit_event;  // where CLONE_PIDFD is missing (gVisor): an eventfd the reaper signals
  pid_t pid =
      clone_child(reaper, std::move(on_exit), a, stack.get() + kChildStack, pidfd, exit_event);
  if (pid < 0) spawn_fail("clone", errno);
  s.pid = pid;
  s.pidfd = exit_event ? std::move(exit_event) : Fd(pidfd);
  if (a.step != kNone) {
    auto kind = a.step == kExec && a.err == ENOENT ? proto::ExitKind::NotFound
                                                   : proto::ExitKind::CannotExecute;
    throw SpawnFailed{kind, a.err, describe(a, req) + ": " + std::strerror(a.err)};
  }
  s.out = std::move(out.read);
  s.err = std::move(err.read);
  return s;
}

}  // namespace space::guest
