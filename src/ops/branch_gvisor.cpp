// `branch` on the gvisor engine; see branch_gvisor.h.
#include "ops/branch_gvisor.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>

#include "core/create_gvisor.h"
#include "core/expiry.h"
#include "core/net.h"
#include "launch/control_client.h"
#include "launch/jail_setup.h"
#include "launch/launcher.h"
#include "store/btrfs.h"
#include "store/paths.h"
#include "store/state.h"
#include "store/store.h"
#include "store/vm_config.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"
#include "util/procfs.h"

namespace space::ops {
namespace {

constexpr int kPauseTimeoutMs = 10000;
constexpr int kCheckpointTimeoutMs = 300000;

// The source's files, for branch `bp` (a new subvolume of reflinks, as for a VM's branch), with
// its own config.json: its id, and the copies of the source's rootfs and image where the source
// had its own (from a template); a rootfs outside the source's directory (space's own, read-only)
// is shared as it is.
store::VmConfig clone_for_branch(const store::SandboxPaths& src, const store::SandboxPaths& bp,
                                 const std::string& id) {
  store::clone_into_subvolume(
      src.dir, bp.dir, [&](const std::string& rel) { return core::left_out_of_branch(src, rel); });
  store::VmConfig cfg = store::load_vm_config(bp.config);
  cfg.id = id;
  if (cfg.rootfs == src.rootfs) cfg.rootfs = bp.rootfs;
  if (!cfg.image_disk.empty()) cfg.image_disk = bp.image_disk;
  if (!cfg.overlay_dir.empty()) cfg.overlay_dir = bp.dir + "/overlay";
  store::save_vm_config(bp.config, cfg, fs::Sync::Volatile);
  return cfg;
}

// The record of branch `id` of `s`, creating: what it inherits (template, image, size, idle
// settings, annotations, the TTL unless `opts` gives one) and a cgroup of its own.
store::SandboxState branch_state(const core::LockedSandbox& s, const std::string& id,
                                 const store::HostConfig& hc, const BranchOptions& opts) {
  store::SandboxState b;
  b.id = id;
  b.engine = "gvisor";
  b.status = store::Status::Creating;
  b.created = store::rfc3339_now();
  b.template_name = s.st.template_name;
  b.image = s.st.image;
  b.parent = s.st.id;
  b.vcpus = s.st.vcpus;
  b.memory_mib = s.st.memory_mib;
  b.annotations = s.st.annotations;
  b.idle_pause_ms = s.st.idle_pause_ms;  // a branch idles as its source does (core/idle.h)
  b.idle_checkpoint_ms = s.st.idle_checkpoint_ms;
  b.cgroup = store::sandbox_entry(hc.jail_cgroup_parent, id);
  if (opts.ttl_ms) {
    core::set_expiry(b, opts.ttl_ms, opts.on_expiry);
  } else {
    b.expires = s.st.expires;
    b.on_expiry = s.st.on_expiry;
  }
  return b;
}

// Checkpoints the source into a fresh `image_dir`, which every branch restores.
void checkpoint_for_branches(const store::SandboxPaths& src, const std::string& image_dir) {
  fs::remove_tree(image_dir);
  if (::mkdir(image_dir.c_str(), 0700) != 0) throw_errno("mkdir " + image_dir);
  Fd dir(::open(image_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) throw_errno("open " + image_dir);
  std::vector<int> fds = {dir.get()};
  core::vmm_op(src, proto::control::SnapshotRequest{image_dir, false}, kCheckpointTimeoutMs, fds);
}

// After a failure: the branches made so far removed (their monitors already killed), the
// checkpoint too, and the source running again if it was.
void undo_branches(const store::Context& ctx, const store::HostConfig& hc,
                   const core::LockedSandbox& s, const std::vector<std::string>& ids,
                   const std::vector<store::SandboxPaths>& made, const std::string& image_dir,
                   bool was_running) noexcept {
  for (size_t i = 0; i < made.size(); i++) {
    try {
      launch::remove_sandbox_cgroup(hc.jail_cgroup_parent + "/" + ids[i]);
      core::set_policy(ctx, ids[i], std::nullopt);
      fs::remove_tree(made[i].run_dir);
      store::remove_store_tree(made[i].dir);
    } catch (const std::exception& cleanup) {
      log::error("branch " + s.st.id + ": cleanup failed: " + cleanup.what());
    }
  }
  try {
    fs::remove_tree(image_dir);
    if (was_running) core::vmm_op(s.p, proto::control::ResumeRequest{}, kPauseTimeoutMs);
  } catch (const std::exception& cleanup) {
    log::error("branch " + s.st.id + ": could not resume the source: " + cleanup.what());
  }
}

}  // namespace

std::vector<store::SandboxState> branch_gvisor_sandbox(const store::Context& ctx,
                                                       const store::HostConfig& hc,
                                                       core::LockedSandbox& s,
                                                       const std::vector<std::string>& ids,
                                                       const std::optional<egress::Policy>& policy,
                                                       const BranchOptions& opts) {
  if (s.st.disk_limit)
    fail("sandbox " + s.st.id +
             " keeps its writes on disk (--disk-size), which runsc's checkpoint "
             "does not carry",
         "branch a sandbox made without --disk-size");
  proc::SignalGuard sig;
  const bool was_running = s.observed == store::Status::Running;
  const std::string image_dir = s.p.dir + "/branch.tmp";
  std::vector<store::SandboxPaths> made;
  std::vector<proc::Child> monitors;
  std::vector<store::SandboxState> out;
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  try {
    checkpoint_for_branches(s.p, image_dir);
    auto t_ck = Clock::now();
    std::vector<launch::VmmLaunch> launches;
    std::vector<store::SandboxLock> locks;  // each branch's, held until it is recorded running
    for (const auto& id : ids) {
      store::SandboxPaths bp = store::sandbox_paths(ctx.root, id);
      clone_for_branch(s.p, bp, id);
      made.push_back(bp);
      locks.emplace_back(bp.lock);
      store::SandboxState b = branch_state(s, id, hc, opts);
      core::set_policy(ctx, id, policy);
      launches.push_back(core::launch_gvisor(ctx, hc, bp, b, image_dir));
      monitors.push_back(std::move(launches.back().child));
      b.pid = monitors.back().pid();
      b.pid_start_time = proc::start_time(b.pid).value_or(0);
      store::write_state(bp.state, b, fs::Sync::Volatile);
      out.push_back(b);
    }
    for (size_t i = 0; i < out.size(); i++) {
      launch::wait_started(monitors[i], launches[i].ready, made[i], /*guest=*/false, sig,
                           launch::boot_timeout_seconds(),
                           "the gvisor monitor of branch " + out[i].id);
      out[i].status = store::Status::Running;
      store::write_state(made[i].state, out[i], fs::Sync::Volatile);
    }
    for (auto& m : monitors) m.release();
    fs::remove_tree(image_dir);  // each branch has restored it
    if (was_running) core::vmm_op(s.p, proto::control::ResumeRequest{}, kPauseTimeoutMs);
    if (policy && !out.empty()) core::ensure_network(ctx, out.front().id);
    if (!out.empty() && core::needs_reaper(out.front())) core::ensure_reaper(ctx);
    auto ms = [](Clock::time_point a, Clock::time_point b) {
      return std::to_string(std::chrono::duration<double, std::milli>(b - a).count());
    };
    log::info("branch " + s.st.id + " into " + std::to_string(out.size()) +
              " (gvisor): checkpoint " + ms(t0, t_ck) + " ms, restores " + ms(t_ck, Clock::now()) +
              " ms");
    return out;
  } catch (...) {
    monitors.clear();  // SIGKILL + reap
    undo_branches(ctx, hc, s, ids, made, image_dir, was_running);
    throw;
  }
}

}  // namespace space::ops
