// pause, resume and checkpoint; see session.h. The status in state.json changes only after the
// VMM has confirmed the operation, and always under the sandbox lock. A checkpoint is built in
// <dir>/checkpoint.tmp (the VMM writes vmstate and memory through a handed-over directory,
// take_snapshot.h, and flushes the disk, then we reflink
// the disk next to them and fsync), then swapped with <dir>/checkpoint by one rename (an
// exchange when an older checkpoint exists); until then the old checkpoint is untouched.
#include "core/session.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/expiry.h"
#include "core/net.h"
#include "core/sandbox.h"
#include "core/session_util.h"
#include "cred/hooks.h"
#include "launch/control_client.h"
#include "launch/jail_setup.h"
#include "launch/take_snapshot.h"
#include "store/activity.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::core {

namespace {

constexpr int kPauseTimeoutMs = 10000;
constexpr int kSnapshotTimeoutMs = 300000;  // writes all of guest memory
constexpr int kStopTimeoutMs = 5000;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void fsync_path(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd || ::fsync(fd.get()) != 0) throw_errno("fsync " + path);
}

// Puts the finished `tmp` in place as `dir` in one rename: an exchange if `dir` exists (the old
// checkpoint then sits at `tmp` and is removed), a plain rename otherwise.
void swap_in(const std::string& tmp, const std::string& dir, const std::string& parent) {
  if (fs::exists(dir)) {
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) != 0)
      throw_errno("rename " + tmp + " to " + dir);
    fsync_path(parent);
    fs::remove_tree(tmp);
  } else {
    if (::rename(tmp.c_str(), dir.c_str()) != 0) throw_errno("rename " + tmp + " to " + dir);
    fsync_path(parent);
  }
}

// Pauses the running sandbox `s` (locked), recording why.
void pause_locked(LockedSandbox& s, int64_t* pause_us, bool idle) {
  if (idle) {  // the intent: if we die before the end, the next use resumes it (wake_sandbox)
    s.st.idle_asleep = true;
    store::write_state(s.p.state, s.st, fs::Sync::Volatile);
  }
  auto r = vmm_op(s.p, proto::control::PauseRequest{}, kPauseTimeoutMs);
  if (pause_us) *pause_us = r.pause_us;
  s.st.status = store::Status::Paused;
  s.st.idle_asleep = idle;
  store::write_state(s.p.state, s.st, fs::Sync::Volatile);
}

// Continues the paused sandbox `s` (locked) in its VMM, or restores it from its checkpoint in a
// new one; it is running, and counts as just used (core/idle.h), when this returns.
void resume_locked(const store::Context& ctx, LockedSandbox& s, int64_t* resume_us,
                   proc::SignalGuard& sig) {
  const std::string& id = s.st.id;
  const bool was_asleep = s.st.idle_asleep;
  s.st.idle_asleep = false;
  if (s.observed == store::Status::Paused) {
    auto r = vmm_op(s.p, proto::control::ResumeRequest{}, kPauseTimeoutMs);
    if (resume_us) *resume_us = r.resume_us;
    s.st.status = store::Status::Running;
    store::write_state(s.p.state, s.st, fs::Sync::Volatile);
  } else {
    std::string ck = checkpoint_dir(s.p);
    bool restorable =
        s.observed == store::Status::Checkpointed || s.observed == store::Status::Stopped;
    if (!restorable) wrong_status(s, "resume");
    if (!has_checkpoint(s.p, s.st))
      fail("sandbox " + id + " is " + store::status_name(s.observed) +
               " and has no checkpoint to resume from",
           "'space destroy " + id + "' removes it");
    if (s.observed == store::Status::Stopped)
      log::warn("sandbox " + id + ": its VMM is gone; resuming from its last checkpoint");
    // The disk must be the one the checkpoint's memory knows (its page cache, its journal).
    if (fs::exists(ck + "/rootfs.ext4")) replace_disk(s.p.rootfs, ck + "/rootfs.ext4");
    if (fs::exists(ck + "/image.ext4")) replace_disk(s.p.image_disk, ck + "/image.ext4");
    std::optional<proc::Child> vmm;
    try {
      vmm.emplace(start_restored(ctx, s.p, s.st, ck, sig));
    } catch (...) {
      if (was_asleep) {  // still asleep: the next use tries again (start_restored put it back)
        try {
          store::SandboxState back = store::read_state(s.p.state);
          back.idle_asleep = true;
          store::write_state(s.p.state, back);
        } catch (const Error& e) {
          log::error("sandbox " + id + ": " + e.what());
        }
      }
      throw;
    }
    vmm->release();
    ensure_network(ctx, id);
    cred::listen_for_sandbox(ctx, id);
  }
  store::ActivityHold(s.p.activity, store::ActivityHold::Wait::NonBlocking);  // used just now
  if (needs_reaper(s.st)) ensure_reaper(ctx);
}

}  // namespace

store::SandboxState pause_sandbox(const store::Context& ctx, const std::string& id,
                                  int64_t* pause_us) {
  try {
    LockedSandbox s = lock_sandbox(ctx, id);
    if (s.observed == store::Status::Paused && s.st.idle_asleep) {
      s.st.idle_asleep = false;  // asleep from idleness: the pause is now an explicit one
      store::write_state(s.p.state, s.st, fs::Sync::Volatile);
      return s.st;
    }
    if (s.observed != store::Status::Running) wrong_status(s, "pause");
    pause_locked(s, pause_us, /*idle=*/false);
    return s.st;
  } catch (Error& e) {
    e.add_context("pause sandbox " + id);
    throw;
  }
}

store::SandboxState resume_sandbox(const store::Context& ctx, const std::string& id,
                                   int64_t* resume_us, uint64_t ttl_ms,
                                   const std::string& on_expiry) {
  try {
    proc::SignalGuard sig;  // a restore is undone (VMM killed) rather than left half-made
    LockedSandbox s = lock_sandbox(ctx, id);
    if (ttl_ms) set_expiry(s.st, ttl_ms, on_expiry);
    resume_locked(ctx, s, resume_us, sig);
    return s.st;
  } catch (Error& e) {
    e.add_context("resume sandbox " + id);
    throw;
  }
}

bool wake_sandbox(const store::Context& ctx, const std::string& id, int64_t* wake_us) {
  try {
    const auto t0 = std::chrono::steady_clock::now();
    proc::SignalGuard sig;
    LockedSandbox s = lock_sandbox(ctx, id);
    if (!s.st.idle_asleep || s.observed == store::Status::Creating) return false;
    if (s.observed == store::Status::Running) {
      // An idle step that died under way (the reaper killed): its VMM may have been paused, or
      // left paused by a snapshot. A resume continues it either way.
      log::warn("sandbox " + id + ": an idle pause or checkpoint was cut short; resuming it");
      vmm_op(s.p, proto::control::ResumeRequest{}, kPauseTimeoutMs);
      s.st.idle_asleep = false;
      store::write_state(s.p.state, s.st, fs::Sync::Volatile);
      return true;
    }
    log::debug("sandbox " + id + ": waking it from its idle " + store::status_name(s.observed));
    resume_locked(ctx, s, nullptr, sig);
    if (wake_us)
      *wake_us = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::steady_clock::now() - t0)
                     .count();
    return true;
  } catch (Error& e) {
    e.add_context("wake sandbox " + id + " from its idle sleep");
    throw;
  }
}

bool idle_pause_sandbox(const store::Context& ctx, const std::string& id) {
  try {
    std::optional<LockedSandbox> s = try_lock_sandbox(ctx, id);
    if (!s || s->observed != store::Status::Running || !s->st.idle_pause_ms) return false;
    pause_locked(*s, nullptr, /*idle=*/true);
    return true;
  } catch (Error& e) {
    e.add_context("idle pause of sandbox " + id);
    throw;
  }
}

namespace {

// Checkpoints the running or paused sandbox `s` (locked) and stops its VMM, recording why.
void checkpoint_locked(const store::Context& ctx, LockedSandbox& s, CheckpointStats* stats,
                       bool idle) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string& id = s.st.id;
  const bool was_running = s.observed == store::Status::Running;
  if (idle && !s.st.idle_asleep) {  // the intent, as an idle pause's
    s.st.idle_asleep = true;
    store::write_state(s.p.state, s.st, fs::Sync::Volatile);
  }
  std::string tmp = s.p.dir + "/checkpoint.tmp";
  std::string ck = checkpoint_dir(s.p);
  fs::remove_tree(tmp);  // the remains of an interrupted checkpoint
  CheckpointStats cs;
  try {
    if (::mkdir(tmp.c_str(), 0700) != 0) throw_errno("mkdir " + tmp);
    if (s.st.engine == "gvisor") {
      // runsc writes one image of the sandbox (memory and the overlay's writes); its root and
      // image stay the read-only ones config.json names.
      Fd dir(::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!dir) throw_errno("open " + tmp);
      std::vector<int> fds = {dir.get()};
      auto r = launch::control_call(s.p.control_sock, proto::control::SnapshotRequest{tmp, false},
                                    kSnapshotTimeoutMs, fds);
      cs.snapshot_ms = ms_since(t0);
      cs.memory_data_bytes = r.memory_data_bytes;
      struct stat img {};
      if (::lstat((tmp + "/" + kGvisorCheckpointImage).c_str(), &img) != 0 || !S_ISREG(img.st_mode))
        fail("runsc left no checkpoint image in " + tmp);
      fsync_path(tmp);
      swap_in(tmp, ck, s.p.dir);
    } else {
      auto r = launch::take_snapshot(s.p, s.st.pid, s.st.uid, tmp, kSnapshotTimeoutMs);
      cs.snapshot_ms = ms_since(t0);
      cs.memory_data_bytes = r.memory_data_bytes;
      cs.memory_diff = r.memory_diff;
      // The VMM has flushed the disk and stays paused: the image now matches memory.
      auto t1 = std::chrono::steady_clock::now();
      fs::copy_file(s.p.rootfs, tmp + "/rootfs.ext4", 0600);
      fsync_path(tmp + "/rootfs.ext4");
      if (fs::exists(s.p.image_disk)) {  // the image's copy: as much the sandbox's as its root
        fs::copy_file(s.p.image_disk, tmp + "/image.ext4", 0600);
        fsync_path(tmp + "/image.ext4");
      }
      fsync_path(tmp);
      cs.disk_ms = ms_since(t1);
      swap_in(tmp, ck, s.p.dir);
    }
  } catch (...) {
    try {
      fs::remove_tree(tmp);
      if (was_running) vmm_op(s.p, proto::control::ResumeRequest{}, kPauseTimeoutMs);
      if (idle && was_running) {
        s.st.idle_asleep = false;
        store::write_state(s.p.state, s.st, fs::Sync::Volatile);
      }
    } catch (const Error& cleanup) {
      log::error("checkpoint " + id + ": could not undo: " + cleanup.what());
    }
    throw;
  }
  // The checkpoint is in place: from here on the sandbox can always be resumed from it.
  s.st.status = store::Status::Checkpointed;
  s.st.idle_asleep = idle;
  stop_vmm(s.st, s.p, kStopTimeoutMs);
  launch::remove_sandbox_cgroup(s.st.cgroup);
  s.st.pid = 0;
  s.st.pid_start_time = 0;
  s.st.uid = 0;
  s.st.cgroup.clear();
  store::write_state(s.p.state, s.st);
  fs::remove_tree(s.p.run_dir);
  cred::revoke_sandbox_grants(ctx, id, "checkpoint", /*forget=*/false);
  cs.total_ms = ms_since(t0);
  if (stats) *stats = cs;
  log::info("checkpoint " + id + ": snapshot " + std::to_string(cs.snapshot_ms) + " ms, disk " +
            std::to_string(cs.disk_ms) + " ms, total " + std::to_string(cs.total_ms) + " ms");
}

}  // namespace

store::SandboxState checkpoint_sandbox(const store::Context& ctx, const std::string& id,
                                       CheckpointStats* stats) {
  try {
    LockedSandbox s = lock_sandbox(ctx, id);
    if (s.observed == store::Status::Checkpointed && s.st.idle_asleep) {
      s.st.idle_asleep = false;  // checkpointed from idleness: now an explicit checkpoint
      store::write_state(s.p.state, s.st);
      if (stats) *stats = CheckpointStats{};
      return s.st;
    }
    if (s.observed != store::Status::Running && s.observed != store::Status::Paused)
      wrong_status(s, "checkpoint");
    checkpoint_locked(ctx, s, stats, /*idle=*/false);
    return s.st;
  } catch (Error& e) {
    e.add_context("checkpoint sandbox " + id);
    throw;
  }
}

bool idle_checkpoint_sandbox(const store::Context& ctx, const std::string& id) {
  try {
    std::optional<LockedSandbox> s = try_lock_sandbox(ctx, id);
    if (!s || !s->st.idle_checkpoint_ms) return false;
    bool running = s->observed == store::Status::Running;
    bool asleep = s->observed == store::Status::Paused && s->st.idle_asleep;
    if (!running && !asleep) return false;
    checkpoint_locked(ctx, *s, nullptr, /*idle=*/true);
    return true;
  } catch (Error& e) {
    e.add_context("idle checkpoint of sandbox " + id);
    throw;
  }
}

}  // namespace space::core
