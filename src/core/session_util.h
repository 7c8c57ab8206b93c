// Pieces shared by the session operations (session.cpp, branch.cpp): opening a sandbox under its
// lock with its observed status, the errors for a sandbox in the wrong status, control calls, and
// starting a VMM restored from a snapshot directory. Internal to src/core.
#pragma once
#include <optional>
#include <string>

#include "launch/control_client.h"
#include "store/context.h"
#include "store/paths.h"
#include "store/state.h"
#include "util/error.h"
#include "util/process.h"

namespace space::core {

// A sandbox held under its SandboxLock, with its record and its status as observed now.
struct LockedSandbox {
  store::SandboxPaths p;
  std::optional<store::SandboxLock> lock;
  store::SandboxState st;
  store::Status observed = store::Status::Stopped;
};

// What wait_sandbox_lock() does when the command holding the lock is stuck on a stopped VMM.
enum class StoppedVmm {
  Fail,  // throw a clear error (EAGAIN) naming both processes
  Kill,  // SIGKILL the VMM, so that the holder fails and lets go, and go on waiting
};

// Takes the lock of sandbox `id` (files in p). If another command holds it, this warns, naming
// that command, and waits for it. Waiting stays bounded: if the holder is itself stopped, or the
// sandbox's recorded VMM is stopped (SIGSTOP or a debugger; a holder talking to it would wait on
// it), this throws at once with a hint (kill -CONT, destroy --force), or, with StoppedVmm::Kill,
// kills that VMM. Throws "sandbox <id> does not exist" if it is removed meanwhile.
store::SandboxLock wait_sandbox_lock(const store::SandboxPaths& p, const std::string& id,
                                     StoppedVmm on_stopped = StoppedVmm::Fail);

// Mounts the store if needed, checks that `id` exists, takes its lock (wait_sandbox_lock) and
// reads its state. Throws "sandbox <id> does not exist".
LockedSandbox lock_sandbox(const store::Context& ctx, const std::string& id);

// lock_sandbox() without waiting: nullopt when another command holds the lock, or the sandbox is
// gone (the reaper's idle steps, core/idle.h, skip such a sandbox this round).
std::optional<LockedSandbox> try_lock_sandbox(const store::Context& ctx, const std::string& id);

// Throws the error for `verb` ("pause", "branch", ...) on a sandbox whose observed status does
// not allow it, with a hint naming what does.
[[noreturn]] void wrong_status(const LockedSandbox& s, const std::string& verb);

// Sends `req` to the sandbox's VMM and returns its reply.
template <class Req>
proto::control::ReplyOf<Req> vmm_op(const store::SandboxPaths& p, const Req& req, int timeout_ms,
                                    std::span<const int> fds = {}) {
  try {
    return launch::control_call(p.control_sock, req, timeout_ms, fds);
  } catch (Error& e) {
    e.add_context("VMM control request \"" + std::string(proto::control::op_name(req)) + "\"");
    throw;
  }
}

// The file runsc writes a gvisor sandbox's checkpoint into (the VM's are vmstate and memory).
inline constexpr const char* kGvisorCheckpointImage = "checkpoint.img";
// Whether sandbox `st` (files in p) has a checkpoint its engine can restore.
bool has_checkpoint(const store::SandboxPaths& p, const store::SandboxState& st);

// Starts a VMM (gvisor: a monitor, restoring runsc's checkpoint) for sandbox `st.id` (files in
// p) restored from `restore_dir`, records it as
// creating with the process started, waits until it runs, and records it (status running,
// pid) in `st` and state.json; on failure the record is put back as it was. The returned Child
// kills the VMM if destroyed before release().
proc::Child start_restored(const store::Context& ctx, const store::SandboxPaths& p,
                           store::SandboxState& st, const std::string& restore_dir,
                           proc::SignalGuard& sig);

// Replaces `disk` (p.rootfs or p.image_disk) with a copy (a reflink on btrfs) of `from`,
// atomically.
void replace_disk(const std::string& disk, const std::string& from);

// Whether `rel` (a path inside the source's directory) stays out of a branch's copy: the
// source's record (the branch writes its own; a copy would name the source's id and VMM if the
// branch were interrupted before that), its checkpoint, logs and lock, and the image a gvisor
// branch restores from (branch.tmp).
bool left_out_of_branch(const store::SandboxPaths& src, const std::string& rel);

// <dir>/checkpoint: where a sandbox's last checkpoint lives.
std::string checkpoint_dir(const store::SandboxPaths& p);

}  // namespace space::core
