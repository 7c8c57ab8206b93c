// A PID 1's duty, shared by every PID 1 space has (guest-init in the guest, the jail's init, the
// contained runner's init in image builds): collecting the status of every child that ends,
// orphans included, so that none stays a zombie. One loop over waitpid(-1), retried on EINTR,
// which tells its callers which pid ended with which status and when no child is left.
#pragma once
#include <sys/types.h>

#include <functional>

namespace space::proc {

// What one reap_ended() call collected.
struct Reaped {
  int count = 0;             // children collected
  bool no_children = false;  // waitpid said ECHILD: the caller has no child left
};

// Collects every child that has ended, without waiting, calling `on_exit(pid, raw wait status)`
// for each (it must not throw). Allocates nothing of its own.
Reaped reap_ended(const std::function<void(pid_t pid, int status)>& on_exit);

// Waits for child `pid` to end, collecting every other child that ends first, as a PID 1 must.
// Returns its raw wait status, or -1 (errno set: ECHILD when it is not our child).
int wait_reaping_others(pid_t pid);

}  // namespace space::proc
