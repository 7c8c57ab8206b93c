// Branching a sandbox (`space branch`): N new running sandboxes with the source's exact memory,
// CPU, device and disk state. On the vm engine (the fork fast path, branch.cpp) it pauses the
// source, btrfs-snapshots its subvolume once per branch while it is paused (so the disk matches
// memory) and has the source VMM fork one VMM per branch over its copy-on-write memory; on
// gvisor (branch_gvisor.h) it checkpoints the source and restores each branch from the image.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "store/context.h"
#include "store/paths.h"
#include "store/state.h"

namespace space::core {

struct BranchOptions {
  uint32_t count = 1;   // how many branches
  std::string name;     // "" = generated ids; else the id (count 1) or <name>-1 .. <name>-N
  std::string net;      // --net for every branch (core/net.h); "" = the source's policy
  uint64_t ttl_ms = 0;  // --ttl for every branch; 0 = the source's expiry, if any
  std::string on_expiry = "destroy";
  bool keep_secrets = false;  // --keep-secrets: each branch gets the source's grants
};

// Makes `count` new running sandboxes with the source's exact memory, CPU, device and disk
// state, with no grants of secrets unless opts.keep_secrets (then the source's); the source
// keeps its status (running or paused). All or nothing: on failure, or a signal, every branch
// made so far is removed. Returns the branches' states in order.
std::vector<store::SandboxState> branch_sandbox(const store::Context& ctx, const std::string& id,
                                                const BranchOptions& opts);

// Whether `rel` (a path inside the source's directory) stays out of a branch's copy: the
// source's record (the branch writes its own; a copy would name the source's id and VMM if the
// branch were interrupted before that), its checkpoint, logs and lock, and the image a gvisor
// branch restores from (branch.tmp).
bool left_out_of_branch(const store::SandboxPaths& src, const std::string& rel);

}  // namespace space::core
