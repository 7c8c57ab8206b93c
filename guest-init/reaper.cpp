// Reaper implementation: a pid -> callback map behind one mutex; see reaper.h for the protocol
// that keeps spawn() and reap() from racing.
#include "reaper.h"

#include <sys/wait.h>

#include <cerrno>

namespace space::guest {

pid_t Reaper::spawn(const std::function<pid_t()>& fork_fn, ExitFn on_exit) {
  std::lock_guard lock(mu_);
  pid_t pid = fork_fn();
  if (pid > 0) waiting_[pid] = std::move(on_exit);
  return pid;
}

void Reaper::forget(pid_t pid) {
  std::lock_guard lock(mu_);
  waiting_.erase(pid);
}

Reaper::Result Reaper::reap() noexcept {
  Result r;
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid == 0) break;
    if (pid < 0) {
      if (errno == EINTR) continue;
      r.no_children = (errno == ECHILD);
      break;
    }
    r.reaped++;
    ExitFn fn;
    {
      std::lock_guard lock(mu_);
      auto it = waiting_.find(pid);
      if (it == waiting_.end()) continue;
      fn = std::move(it->second);
      waiting_.erase(it);
    }
    try {
      fn(pid, status);
    } catch (...) {
      // A callback broke its contract; PID 1 carries on.
    }
  }
  return r;
}

size_t Reaper::pending() const {
  std::lock_guard lock(mu_);
  return waiting_.size();
}

}  // namespace space::guest
