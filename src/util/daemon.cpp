// On-demand daemons: their lock and their start; see daemon.h.
#include "util/daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>

#include "util/env.h"
#include "util/error.h"
#include "util/log.h"
#include "util/ready.h"
#include "util/socket.h"
#include "util/timing.h"

namespace space::daemon {

Fd take_lock(const std::string& path, int wait_ms) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) throw_errno("open " + path);
  int64_t end = timing::mono_ms() + wait_ms;
  for (;;) {
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return fd;
    if (errno != EWOULDBLOCK && errno != EINTR) throw_errno("lock " + path);
    if (timing::mono_ms() >= end) return Fd();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Fd claim(const std::string& lock_path, int wait_ms, Fd& ready, const std::string& already) {
  Fd lock = take_lock(lock_path, wait_ms);
  if (!lock) {
    log::info(already);
    report_ready(ready);
  }
  return lock;
}

bool running(const std::string& lock_path) {
  Fd fd(::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return false;                                        // never started here
  if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) return false;  // the lock goes with the fd
  return errno == EWOULDBLOCK;
}

proc::Child start(const std::vector<std::string>& argv, const std::string& log_path,
                  const std::string& what, int timeout_ms) {
  Pipe pipe = Pipe::make();
  proc::SpawnOptions o;
  o.fds.push_back(pipe.write.get());
  o.env = env::daemon_environment();  // nothing of the caller's environment reaches a daemon
  proc::Child child = proc::spawn_detached(argv, log_path, o);
  pipe.write.reset();
  set_nonblocking(pipe.read.get());
  std::optional<std::string> line;
  try {
    line = net::read_line(pipe.read.get(), net::Deadline::after_ms(timeout_ms), 4096);
  } catch (Error& e) {
    e.add_context("start " + what);
    e.set_hint("see " + log_path);
    throw;
  }
  if (!line) throw Error(what + " exited before it was ready", 0, "see " + log_path);
  if (line->rfind("error: ", 0) == 0)
    throw Error(what + " failed: " + line->substr(7), 0, "see " + log_path);
  if (*line != "ok") fail(what + " sent an unexpected ready line: \"" + *line + "\"");
  return child;
}

Fd ready_pipe(int fd) {
  return Fd(fd >= 0 && ::fcntl(fd, F_GETFD) >= 0 ? fd : -1);
}

void report_ready(Fd& ready, const std::string& line) {
  ready::report_line(ready, line);
  ready.reset();
}

int report_start_failure(Fd& ready, const std::exception& e) {
  int code = ready::report_failure(ready, e);
  ready.reset();
  return code;
}

Fd watch_signals(std::initializer_list<int> signals, bool ignore_sigpipe) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) throw_errno("sigprocmask");
  Fd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd) throw_errno("signalfd");
  if (ignore_sigpipe) ::signal(SIGPIPE, SIG_IGN);
  return fd;
}

Fd stop_loop_on_signals(EventLoop& loop) {
  Fd fd = watch_signals({SIGTERM, SIGINT, SIGHUP});
  int raw = fd.get();
  loop.add(raw, EPOLLIN, [&loop, raw](uint32_t) {
    signalfd_siginfo si;
    while (::read(raw, &si, sizeof si) == sizeof si) {
      log::info("signal " + std::to_string(si.ssi_signo) + ": exiting");
      loop.stop();
    }
  });
  return fd;
}

IdleExit::IdleExit(int64_t idle_ms) : idle_ms_(idle_ms), last_(timing::mono_ms()) {}

void IdleExit::touch() {
  last_ = timing::mono_ms();
}

int64_t IdleExit::left(bool busy, int64_t check_ms) {
  if (busy) return check_ms;
  int64_t left = idle_ms_ - (timing::mono_ms() - last_);
  if (left <= 0) log::info("idle for " + std::to_string(idle_ms_ / 1000) + " s: exiting");
  return left;
}

}  // namespace space::daemon
