// How a VMM process enters its jail (jail/): the one sequence that vmm_main runs for every jailed
// VMM (create, restore, resume, template build), that `__vmm --probe` runs without a VM
// (launch/vmm_probe.h) and that scripts/bench-jail.sh times. The VMM runs as PID 2 of a PID
// namespace of its own, whose PID 1 started it and serves as the jail's init, moving it into its
// cgroup meanwhile (jail/init.h); it is still root, with everything it will use already open. It
// takes the seccomp programs (built in: jail/seccomp_prebuilt.h), enters the jail's namespaces
// (the network one shared: jail/network.h) and its root, the run directory (jail/root.h), drops to
// the sandbox's uid (jail/privileges.h) and loads the VMM program; then, before it maps guest
// memory, it waits for the init to say it is in its cgroup. No fork: the init already exists.
#pragma once
#include <string>

#include "jail/privileges.h"
#include "jail/seccomp.h"
#include "util/fd.h"
#include "util/phase_log.h"

namespace space::monitor {

// What a VMM's jail is made of.
struct JailPlan {
  jail::Identity who;    // the sandbox's uid and gid (never 0)
  std::string root_dir;  // the jail's root: the run directory, read-only (jail/root.h)
  std::string hostname;  // the jail's UTS name: the sandbox's id
  jail::Unlisted unlisted = jail::Unlisted::Kill;
  // The jails' shared network namespace (jail/network.h), owned: closed once joined. Invalid: a
  // new one of its own.
  Fd network;
  // The jails' base mount namespace (jail/mount_base.h), owned: closed once left. Invalid: the
  // host's, pivoted.
  Fd mount_base;
  // RLIMIT_FSIZE once dropped (jail::drop): the largest file the VMM may write; 0 = no bound.
  uint64_t max_file_bytes = 0;
};

// A descriptor passed as `flag` `fd`, owned from here: -1 gives an invalid Fd; one that is not
// open throws.
Fd passed_fd(int fd, const std::string& flag);
// The shared network namespace passed as `fd` (--jail-netns-fd), checked: -1 gives an invalid
// Fd; a descriptor that is not open or not a network namespace throws.
Fd network_from_fd(int fd);
// The base mount namespace passed as `fd` (--jail-mntns-fd), checked in the same way.
Fd mount_base_from_fd(int fd);

// Waits for the jail's PID 1 to say ("p" on `placed`, from --jail-placed-fd; invalid: no wait)
// that this process is in its cgroups, so that no guest page is charged elsewhere; throws with
// the init's reason when it could not make or join them (jail/init.h, kPlacementFailed), or when
// it closed the pipe without a word.
void wait_placed(Fd placed);

// Enters the jail of `plan`, marking each step in `phases`. Returns the program each vCPU thread
// loads. Throws Error naming the step that failed.
jail::Program enter_vmm_jail(JailPlan& plan, PhaseLog& phases);

}  // namespace space::monitor
