// The jail's PID 1. The launcher clones it as PID 1 of a new PID namespace, and it starts the VMM
// as PID 2 (util/process.h, SpawnOptions::init). Then run_init() moves the VMM and itself into
// their cgroups, enters a jail of its own (jail/root.h), drops to the sandbox's uid and installs
// the init role's seccomp filter, all while the VMM starts on its own. It stays as the
// namespace's init: it reaps every process of the jail (the VMM,
// and branch VMMs forked from it, which become its children when their source exits), forwards
// SIGTERM, SIGINT and SIGHUP to the VMM while it lives, and exits once the last process has
// gone, with the VMM's exit status (its code, or 128+N when signal N killed it), so whoever
// waits for the jail learns how the sandbox ended. It is the reason a branch outlives its
// source: when a PID namespace's init exits, the kernel kills everything left in it.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "jail/privileges.h"
#include "jail/seccomp.h"

namespace space::jail {

// What the jail's PID 1 is given, prepared before the clone.
struct InitPlan {
  Identity who;                    // the sandbox's uid and gid
  int uid_lock_fd = -1;            // the uid's claim (jail/uid_pool.h), held while the jail lives
  std::vector<int> program_procs;  // open cgroup.procs files the VMM is moved into
  std::vector<int> own_procs;      // and those of the group the PID 1 waits in
  // The write end of a pipe the VMM waits on before it maps guest memory (-1: none): "p" once
  // the VMM is in every one of its groups, else kPlacementFailed and why.
  int placed_fd = -1;
  std::string root_dir;    // its root: the run directory (jail/root.h)
  int mount_base_fd = -1;  // the jails' base mount namespace (jail/mount_base.h); -1: pivot
  std::string hostname;
  const Program* filter = nullptr;  // the init role's (seccomp.h), loaded last
};

// The first byte on the placed pipe when the VMM could not be put in its groups; a message
// saying why follows it.
constexpr char kPlacementFailed = 'e';

// PID 1 of a jail whose VMM (`program`, its pid in the namespace) has started: moves it and
// itself into their cgroups and tells the VMM through `placed_fd` (after a failed move it tells
// the VMM why, which then refuses to run outside its limits),
// enters a jail of its own (jail/root.h; it keeps its network namespace: its filter allows no
// socket), keeps only stdio and the claim (as fd 3), drops to `plan.who` (16
// files at most), loads the filter and serves as init. A failed step is logged on stderr and
// kills the VMM, so the jail ends. Never returns.
[[noreturn]] void run_init(pid_t program, const InitPlan& plan);

// PID 1 of a jail whose groups could not be made: logs `why`, tells the VMM through
// `plan.placed_fd` (it fails its start with that), and serves as init until the VMM is gone.
[[noreturn]] void refuse_placement(pid_t program, const InitPlan& plan, const std::string& why);

// Serves as init until no child is left; never returns. Call with the signals above blocked in
// every thread of the process (it takes them with sigtimedwait) and with `vmm` its child.
[[noreturn]] void serve_as_init(pid_t vmm);

}  // namespace space::jail
