// `branch` on the gvisor engine: runsc checkpoints the source (left paused; it cannot save a
// connected host socket, so the source's agent connections are dropped first and guest-init
// dials again, see monitor/gvisor_main.h), and each branch is a new sandbox whose monitor
// restores that image into a runsc container of its own: its own run directory and host socket
// directory (bound at the same path in the guest), its own cgroup, no grants, the source's
// network policy unless --net says otherwise. The source's memory is copied, not shared: gVisor
// restores an image into each sandbox's own memory. Internal to core (branch.cpp calls it under
// the source's lock).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/session.h"
#include "core/session_util.h"
#include "egress/policy.h"
#include "ops/branch_options.h"
#include "store/config.h"
#include "store/context.h"

namespace space::ops {

// Branches `s` (locked, running or paused, on gvisor) into the sandboxes `ids`, all or nothing;
// the source ends in the status it had. Returns the branches' states, running.
std::vector<store::SandboxState> branch_gvisor_sandbox(const store::Context& ctx,
                                                       const store::HostConfig& hc,
                                                       core::LockedSandbox& s,
                                                       const std::vector<std::string>& ids,
                                                       const std::optional<egress::Policy>& policy,
                                                       const BranchOptions& opts);

}  // namespace space::ops
