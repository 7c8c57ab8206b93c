// Branching a sandbox (`space branch`): N new running sandboxes with the source's exact memory,
// CPU, device and disk state. On the vm engine (the fork fast path, branch.cpp) it pauses the
// source, btrfs-snapshots its subvolume once per branch while it is paused (so the disk matches
// memory) and has the source VMM fork one VMM per branch over its copy-on-write memory; on
// gvisor (branch_gvisor.h) it checkpoints the source and restores each branch from the image.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/branch_options.h"
#include "store/context.h"
#include "store/paths.h"
#include "store/state.h"

namespace space::ops {

// Makes `count` new running sandboxes with the source's exact memory, CPU, device and disk
// state, with no grants of secrets unless opts.keep_secrets (then the source's); the source
// keeps its status (running or paused). All or nothing: on failure, or a signal, every branch
// made so far is removed. Returns the branches' states in order.
std::vector<store::SandboxState> branch_sandbox(const store::Context& ctx, const std::string& id,
                                                const BranchOptions& opts);

}  // namespace space::ops
