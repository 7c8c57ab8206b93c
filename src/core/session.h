// Long-running sessions: pause, resume and checkpoint a sandbox (branch: ops/branch.h). Each
// operation holds the
// sandbox's SandboxLock while it changes it, talks to the VMM over control.sock (pause, resume,
// snapshot, stop) and records the new status in state.json. A checkpoint lives in the sandbox's
// subvolume as <dir>/checkpoint/{vmstate,memory,rootfs.ext4}; it is written to checkpoint.tmp
// and only then swapped in with one rename, so a torn checkpoint is never used. Resuming a
// checkpointed sandbox (or one whose VMM died after a checkpoint) puts the checkpoint's disk back
// and restores a new VMM from it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "store/context.h"
#include "store/paths.h"
#include "store/state.h"

namespace space::core {

// Parks every vCPU of a running sandbox; status becomes "paused". Throws (with a hint) if the
// sandbox does not exist or is not running. A sandbox asleep from idleness (core/idle.h) stays
// as it is, its pause made explicit: the next command no longer wakes it. Returns the new state;
// `pause_us` gets the VMM's pause latency when non-null.
store::SandboxState pause_sandbox(const store::Context& ctx, const std::string& id,
                                  int64_t* pause_us = nullptr);

// Continues a paused sandbox in its VMM, or restores a checkpointed one (or one whose VMM is
// gone but which has a checkpoint) in a new VMM; status becomes "running". Throws if it is
// already running or there is nothing to resume from. `resume_us`, when non-null, gets the VMM's
// time to resume a paused VM (left alone for a restore).
// With `ttl_ms`, the sandbox gets a new expiry (core/expiry.h) `on_expiry`. Either way it counts
// as just used (core/idle.h).
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
// is left as it was (resumed if it was running) and the old checkpoint, if any, stays. A sandbox
// checkpointed from idleness stays as it is, its checkpoint made explicit.
store::SandboxState checkpoint_sandbox(const store::Context& ctx, const std::string& id,
                                       CheckpointStats* stats = nullptr);

// Idleness (core/idle.h). These do nothing and return false when the sandbox is not in the
// status they need, or (the idle steps) when another command holds its lock.
// Pauses a running sandbox with an idle pause set, as asleep: the next use wakes it.
bool idle_pause_sandbox(const store::Context& ctx, const std::string& id);
// Checkpoints a running sandbox, or one asleep in an idle pause, with an idle checkpoint set, as
// asleep; its VMM exits.
bool idle_checkpoint_sandbox(const store::Context& ctx, const std::string& id);
// Resumes (or restores) a sandbox that idleness put to sleep; false when it is not asleep (an
// explicit pause or checkpoint is never undone here). `wake_us` gets the time it took.
bool wake_sandbox(const store::Context& ctx, const std::string& id, int64_t* wake_us = nullptr);

}  // namespace space::core
