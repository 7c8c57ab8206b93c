// Long-running sessions: pause, resume, checkpoint and branch a sandbox. Each operation holds the
// sandbox's SandboxLock while it changes it, talks to the VMM over control.sock (pause, resume,
// snapshot, stop) and records the new status in state.json. A checkpoint lives in the sandbox's
// subvolume as <dir>/checkpoint/{vmstate,memory,rootfs.ext4}; it is written to checkpoint.tmp
// and only then swapped in with one rename, so a torn checkpoint is never used. Resuming a
// checkpointed sandbox (or one whose VMM died after a checkpoint) puts the checkpoint's disk back
// and restores a new VMM from it. A branch (the fork fast path, branch.cpp) pauses the source,
// btrfs-snapshots its subvolume once per branch while it is paused (so the disk matches memory)
// and has the source VMM fork one VMM per branch over its copy-on-write memory.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "store/context.h"
#include "store/paths.h"
#include "store/state.h"

namespace space::core {

// Parks every vCPU of a running sandbox; status becomes "paused". Throws (with a hint) if the
// sandbox does not exist or is not running. Returns the new state; `pause_us` gets the VMM's
// pause latency when non-null.
store::SandboxState pause_sandbox(const store::Context& ctx, const std::string& id,
                                  int64_t* pause_us = nullptr);

// Continues a paused sandbox in its VMM, or restores a checkpointed one (or one whose VMM is
// gone but which has a checkpoint) in a new VMM; status becomes "running". Throws if it is
// already running or there is nothing to resume from. `resume_us`, when non-null, gets the VMM's
// time to resume a paused VM (left alone for a restore).
// With `ttl_ms`, the sandbox gets a new expiry (core/expiry.h) `on_expiry`.
store::SandboxState resume_sandbox(const store::Context& ctx, const std::string& id,
                                   int64_t* resume_us = nullptr, uint64_t ttl_ms = 0,
                                   const std::string& on_expiry = "destroy");

// Timings of a checkpoint, in milliseconds.
struct CheckpointStats {
  double snapshot_ms = 0;  // pause + vCPU/device state + memory + disk flush, in the VMM
  double disk_ms = 0;      // copy (reflink) of the disk into the checkpoint
  double total_ms = 0;
  uint64_t memory_data_bytes = 0;  // bytes of guest memory actually written
  bool memory_diff = false;        // written as a diff against the memory file RAM maps
};

// Writes a consistent checkpoint of a running or paused sandbox into <dir>/checkpoint, then stops
// its VMM; status becomes "checkpointed". On failure before the checkpoint is in place, the VMM
// is left as it was (resumed if it was running) and the old checkpoint, if any, stays.
store::SandboxState checkpoint_sandbox(const store::Context& ctx, const std::string& id,
                                       CheckpointStats* stats = nullptr);

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

// <dir>/checkpoint: where a sandbox's last checkpoint lives.
std::string checkpoint_dir(const store::SandboxPaths& p);

}  // namespace space::core
