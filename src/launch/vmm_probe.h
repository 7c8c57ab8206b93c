// A VMM's start without a VM: the launcher (launch/launcher.h) starts `space __vmm --probe` exactly
// as it starts a sandbox's VMM (uid claim, cgroups, run directory, a new PID namespace, the fixed
// environment), and that VMM enters its jail (monitor/vmm_jail.h), reports "ok" from inside it
// and exits; with the jail off ([jail] enable = false) it reports at once. So every step of the
// jail is tried for real, on a host with or without KVM: `space check` reports it, ctest's
// jail.start runs it, and scripts/bench-jail.sh times it jailed and not.
#pragma once
#include <string>

#include "store/config.h"
#include "store/context.h"

namespace space::launch {

struct ProbeResult {
  double ms = 0;         // from the launch to the VMM's "ok"
  double start_ms = -1;  // from the launch to the VMM's first step of its own (its clone, exec,
                         // loading and arguments), when ctx.log_level is info or debug; else -1
  std::string phases;    // the jailed VMM's own phases ("seccomp programs 0.01 ms, ..."), when
                         // ctx.log_level is info or debug; else ""
};

// Starts a probe VMM, jailed as `hc` says, and waits for it to report and exit (10 s at most).
// Throws Error naming what failed, with its log's last lines. Leaves no process, cgroup, uid
// claim or directory behind either way.
ProbeResult probe_vmm_start(const store::Context& ctx, const store::HostConfig& hc);

}  // namespace space::launch
