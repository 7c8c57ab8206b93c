// Reaper implementation: a pid -> callback map behind one mutex; see reaper.h for the protocol
// that keeps spawn() and reap() from racing.
#include "reaper.h"

#include "util/reap.h"

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
  proc::Reaped got = proc::reap_ended([this](pid_t pid, int status) {
    ExitFn fn;
    {
      std::lock_guard lock(mu_);
      auto it = waiting_.find(pid);
      if (it == waiting_.end()) return;  // an orphan: its status is dropped
      fn = std::move(it->second);
      waiting_.erase(it);
    }
    try {
      fn(pid, status);
    } catch (...) {
      // A callback broke its contract; PID 1 carries on.
    }
  });
  return {got.count, got.no_children};
}

size_t Reaper::pending() const {
  std::lock_guard lock(mu_);
  return waiting_.size();
}

}  // namespace space::guest
