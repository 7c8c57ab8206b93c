// Reaper: collects the exit status of every child of guest-init. As PID 1 it inherits every
// orphan in the guest, so it reaps with waitpid(-1, WNOHANG) whenever SIGCHLD arrives (the event
// loop owns that). A feature that starts its own processes (exec) must not lose their statuses
// to that loop, so it forks through spawn(): the registry lock is held from fork until the pid's
// callback is recorded, and reap() looks callbacks up under the same lock, so even a child that
// exits at once is dispatched to its owner. Statuses of unregistered pids (orphans) are dropped.
#pragma once
#include <sys/types.h>

#include <functional>
#include <mutex>
#include <unordered_map>

namespace space::guest {

class Reaper {
 public:
  // Called on the reaping thread with the raw wait status; must be quick and must not throw
  // (e.g. store the status and wake the owner through an eventfd).
  using ExitFn = std::function<void(pid_t pid, int status)>;

  struct Result {
    int reaped = 0;            // children collected by this call
    bool no_children = false;  // waitpid said ECHILD: guest-init has no children left
  };

  // Runs `fork_fn` (it forks or spawns and returns the child's pid, or -1 with errno set) with the
  // registry locked and records `on_exit` for the pid it returns. Returns that pid (or -1).
  // The child side of `fork_fn` must not touch the Reaper.
  pid_t spawn(const std::function<pid_t()>& fork_fn, ExitFn on_exit);
  // Drops the callback for `pid`; its status will be discarded when it is reaped.
  void forget(pid_t pid);
  // Collects every child that has exited, without blocking, and runs the registered callbacks
  // (outside the lock). Never throws.
  Result reap() noexcept;
  // How many pids have a callback waiting.
  size_t pending() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<pid_t, ExitFn> waiting_;
};

}  // namespace space::guest
