// How a VMM process enters its jail (jail/): the one sequence that vmm_main runs for every jailed
// VMM (create, restore, resume, template build) and that scripts/bench-jail.sh times on its own.
// The process must be PID 1 of a PID namespace of its own (the launcher clones it so) and still
// root, with everything it will use already open. It takes the seccomp programs (built in:
// jail/seccomp_prebuilt.h), opens its cgroups' cgroup.procs files, enters the jail's namespaces
// and empty root (jail/root.h) and forks. The parent stays behind as the jail's PID 1: it moves
// the VMM and then itself into their cgroups (off the VMM's path: the first move after a while
// waits for an RCU grace period), drops to the sandbox's uid, loads the init program and serves
// as init (jail/init.h) until the jail is empty; it never returns. The child, the VMM proper,
// drops to the sandbox's uid and loads the VMM program, and returns.
#pragma once
#include <sys/types.h>

#include <string>

#include "jail/privileges.h"
#include "jail/seccomp.h"
#include "util/fd.h"
#include "util/phase_log.h"

namespace space::monitor {

// What a VMM's jail is made of.
struct JailPlan {
  jail::Identity who;       // the sandbox's uid and gid (never 0)
  int uid_lock_fd = -1;     // the uid's claim (jail/uid_pool.h), kept by the jail's PID 1
  std::string cgroup;       // the VMM's group ("space/ID"), "" = none
  std::string init_cgroup;  // the group of the jail's PID 1 ("space/init"), "" = none
  std::string mount_point;  // where the jail's empty root is mounted: the run directory
  std::string hostname;     // the jail's UTS name: the sandbox's id
  jail::Unlisted unlisted = jail::Unlisted::Kill;
};

// Enters the jail of `plan`, marking each step in `phases`. Returns, in the VMM, the program
// each vCPU thread loads; the jail's PID 1 never returns (it closes `ready` first: the VMM
// reports on it). Throws Error, before the fork, if a step fails.
jail::Program enter_vmm_jail(const JailPlan& plan, Fd& ready, PhaseLog& phases);

}  // namespace space::monitor
