// Processes identified safely. A pid alone can be reused, so the project names a process by
// (pid, start time), the start time being field 22 of /proc/PID/stat in clock ticks since boot.
// ProcessRef turns such a pair into a pidfd after checking the start time, so signals and waits
// go to that exact process. Child owns a process this one forked: unless released, its
// destructor SIGKILLs and reaps it, so an error path never leaves a child behind.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/fd.h"

namespace space::proc {

// A pidfd on one verified process.
class ProcessRef {
 public:
  // A pidfd for `pid` if it is alive and its start time matches; nullopt otherwise.
  static std::optional<ProcessRef> open(pid_t pid, uint64_t start_time);
  pid_t pid() const { return pid_; }
  // Readable once the process has exited; for poll().
  int fd() const { return fd_.get(); }
  // Sends `sig`; false if the process is already gone. Throws on other errors.
  bool signal(int sig) const;
  // Waits up to timeout_ms (-1 = forever) for the process to exit; true if it has.
  bool wait_exit(int timeout_ms) const;

 private:
  ProcessRef(pid_t pid, Fd fd) : pid_(pid), fd_(std::move(fd)) {}
  pid_t pid_;
  Fd fd_;
};

// A forked child of this process.
class Child {
 public:
  Child() = default;
  // Takes ownership of a child just returned by fork(); opens a pidfd on it.
  explicit Child(pid_t pid);
  Child(Child&& o) noexcept;
  Child& operator=(Child&& o) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  // SIGKILLs and reaps the child unless it was released or already reaped.
  ~Child();

  pid_t pid() const { return pid_; }
  // Readable once the child has exited; for poll().
  int pidfd() const { return pidfd_.get(); }
  // Reaps the child if it has exited (non-blocking); true once it has.
  bool exited();
  // Blocks until the child exits, reaps it, and returns its waitpid() status.
  int wait();
  // waitpid() status once exited() returned true.
  int status() const { return status_; }
  // Stops owning the child (it keeps running); returns its pid.
  pid_t release();

 private:
  void kill_and_reap();
  pid_t pid_ = -1;
  Fd pidfd_;
  bool reaped_ = false;
  int status_ = 0;
};

// How spawn_detached() starts its child.
struct SpawnOptions {
  std::vector<int> fds;  // passed as fds 3, 4, ... in this order (fd 3: the ready pipe)
  // The child is PID 1 of a new PID namespace (a jailed VMM: jail/root.h).
  bool new_pid_namespace = false;
  // The child's whole environment ("NAME=value"); nullopt inherits ours.
  std::optional<std::vector<std::string>> env;
  // With new_pid_namespace: the cloned child stays as the namespace's PID 1 and starts argv as
  // PID 2 (vfork and exec, so no copy of its memory is made), then calls init(pid of argv's
  // process, first of its own fds), which must not return. The last `init_fds` of `fds` are
  // the init's alone, from that fd on; argv's process gets the ones before them, and the init
  // keeps none of those.
  std::function<void(pid_t, int)> init;
  size_t init_fds = 0;
};

// Starts argv[0] (argv as given) as a detached daemon: a new session, stdin from /dev/null,
// stdout and stderr appended to `log_path`, an empty signal mask, and no fds but 0-2 and
// `opts.fds`. In our PID namespace, through posix_spawn, whose vfork-like clone copies none of
// our memory (a fork of a large process copies its page tables first); it throws Error naming
// the cause if the log cannot be opened or the exec fails. In a new one (new_pid_namespace), the
// child is cloned with a copy of our memory, and if its set-up or the exec fails it writes
// "error: <step> failed\n" to fd 3 (when it passes one) and exits 127; with opts.init, the
// returned Child is that init.
Child spawn_detached(const std::vector<std::string>& argv, const std::string& log_path,
                     const SpawnOptions& opts);
// The same, passing only `pass_fd` (if >= 0) as fd 3, with our environment.
Child spawn_detached(const std::vector<std::string>& argv, const std::string& log_path,
                     int pass_fd);

// Makes /proc/self/cmdline (what ps and pgrep -f show) read `args`, and `env` ("NAME=value"
// strings) the process's whole environment, as getenv() and /proc/self/environ see it: what an
// exec of args with env would show, for a copy of a program that runs on as something else (the
// jail's PID 1, cloned from the CLI, which must not keep the caller's environment). The strings
// are written over the process's own argument and environment strings, zeroing the rest of
// their room, and the kernel is told where each now lies (PR_SET_MM_MAP). When both do not fit,
// or the kernel refuses, cmdline shows the arguments (truncated to the room) and environ
// nothing; the refusal's errno is returned. Returns 0 or an errno value; EINVAL for no
// arguments or an environment string without a name.
int set_process_strings(const std::vector<std::string>& args, const std::vector<std::string>& env);

// The result of run(): the waitpid() status and what the program wrote (stdout and stderr
// interleaved, at most the last 64 KiB).
struct RunResult {
  int status = 0;
  std::string output;
  bool ok() const;  // exited with status 0
};

// Runs argv[0] (an absolute path) with argv to completion: stdin from /dev/null, stdout and
// stderr captured, no fds but 0-2. Throws only if it cannot be started; exit 127 means exec failed.
// With `output_fd` >= 0, stdout and stderr are that fd instead and nothing is captured (for a
// program that leaves daemons holding its stdio, such as `runsc run --detach`).
// With `dies_with_caller`, the program is killed (SIGKILL) when the calling thread ends, our
// process killed included: an orphaned `runsc run` would otherwise go on making a sandbox,
// its cgroup and its state files for a monitor that is gone (and under a destroy's feet).
RunResult run(const std::vector<std::string>& argv, int output_fd = -1,
              bool dies_with_caller = false);
// The absolute path of executable `name` in $PATH, /usr/sbin, /sbin or /usr/bin; "" if none.
std::string find_program(const std::string& name);

// Blocks SIGINT, SIGTERM and SIGHUP for its lifetime and delivers them to a signalfd instead, so a
// long operation can notice Ctrl-C (poll fd()) and clean up before it ends. Restores the mask.
class SignalGuard {
 public:
  // `extra` signals (e.g. SIGWINCH, SIGPIPE) are routed to the signalfd as well.
  explicit SignalGuard(std::initializer_list<int> extra = {});
  explicit SignalGuard(const std::vector<int>& extra);
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;
  // Readable when one of the signals is pending.
  int fd() const { return fd_.get(); }
  // The pending signal's number, consuming it; 0 if none.
  int take();
  // Throws Error("interrupted by SIGxxx") if a signal is pending.
  void check();

 private:
  sigset_t set_{}, old_{};
  Fd fd_;
};

// "SIGINT" etc. for a signal number.
std::string signal_name(int sig);
// "exited with status N" / "killed by signal N (SIGKILL)" for a waitpid() status.
std::string describe_status(int status);
// The exit code for a waitpid() status, as a shell gives it: the code, or 128+N for a signal N
// (1 for anything else).
int exit_code_of(int status);

}  // namespace space::proc
