// `branch`, the fast path (design.md). Under the source's lock: the source VMM parks its vCPUs
// and flushes its disk ("pause" with sync); each branch is a new subvolume with reflinks of the
// source's files taken now (clone_source), so its disk matches the paused memory; each gets its
// own config.json (id, disk path) and a "creating" record, without the source's checkpoint or
// logs; then the source VMM forks one branch VMM per branch ("branch" op, vmm/branch_fork.h),
// whose guest memory is the source's, shared copy-on-write, resumes the source (if it was
// running) as soon as the forks exist, and answers once every branch is ready; the branches are
// recorded as running with their pids. The source is paused for the N clones plus the forks.
// All or nothing: a failure kills the branch VMMs started and removes every branch's subvolume
// and run directory.
#include "ops/branch.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>

#include "core/expiry.h"
#include "core/inject.h"
#include "core/net.h"
#include "core/sandbox.h"
#include "core/session.h"
#include "core/session_util.h"
#include "cred/hooks.h"
#include "launch/jail_setup.h"
#include "launch/launcher.h"
#include "ops/branch_gvisor.h"
#include "store/btrfs.h"
#include "store/config.h"
#include "store/store.h"
#include "store/vm_config.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/procfs.h"
#include "util/socket.h"

namespace space::ops {

namespace {

constexpr int kPauseTimeoutMs = 10000;
constexpr int kBranchTimeoutMs = 60000;
constexpr uint32_t kMaxBranches = 64;

std::vector<std::string> branch_ids(const store::Context& ctx, const BranchOptions& o) {
  if (o.count < 1 || o.count > kMaxBranches)
    fail("--count " + std::to_string(o.count) + ": out of range 1.." +
         std::to_string(kMaxBranches));
  std::vector<std::string> ids;
  for (uint32_t i = 1; i <= o.count; i++) {
    std::string id = o.name.empty() ? store::generate_id()
                     : o.count == 1 ? o.name
                                    : o.name + "-" + std::to_string(i);
    if (fs::exists(store::sandbox_paths(ctx.root, id).dir))  // sandbox_paths validates the id
      fail("sandbox " + id + " already exists",
           "pick another --name, or 'space destroy " + id + "'");
    ids.push_back(id);
  }
  return ids;
}

// Makes branch directory `bp.dir`, a new subvolume, from the paused source's: a reflink of every
// file (the disk as it is now, shared copy-on-write, like the template's memory and vmstate),
// without what left_out_of_branch names (the record, the checkpoint: its history is not the
// branch's to resume, logs and lock). store::clone_into_subvolume says why not a snapshot (the
// figures are in ARCHITECTURE.md, "Measurements").
void clone_source(const store::SandboxPaths& src, const store::SandboxPaths& bp) {
  store::clone_into_subvolume(
      src.dir, bp.dir, [&](const std::string& rel) { return core::left_out_of_branch(src, rel); });
}

// Turns a fresh clone of the source into sandbox `b` (paths bp): its own config, a "creating"
// record, a run directory for the source's jail (a branch shares its uid) and a cgroup of its own.
// Returns its config.
store::VmConfig prepare_branch(const store::HostConfig& hc, const store::SandboxPaths& bp,
                               const store::SandboxState& src, store::SandboxState& b) {
  store::VmConfig cfg = store::load_vm_config(bp.config);
  cfg.id = b.id;
  cfg.rootfs = bp.rootfs;
  if (!cfg.image_disk.empty()) cfg.image_disk = bp.image_disk;
  store::save_vm_config(bp.config, cfg, fs::Sync::Volatile);
  b.status = store::Status::Creating;
  b.created = store::rfc3339_now();
  b.template_name = src.template_name;
  b.image = src.image;
  b.parent = src.id;
  b.vcpus = src.vcpus;
  b.memory_mib = src.memory_mib;
  b.annotations = src.annotations;
  b.idle_pause_ms = src.idle_pause_ms;  // a branch idles as its source does (core/idle.h)
  b.idle_checkpoint_ms = src.idle_checkpoint_ms;
  b.uid = src.uid;
  if (b.expires.empty()) {  // no --ttl of its own: the source's expiry
    b.expires = src.expires;
    b.on_expiry = src.on_expiry;
  }
  if (src.uid) b.cgroup = launch::make_sandbox_cgroup(hc, b.id, b.vcpus, b.memory_mib);
  b.disk_limit = src.disk_limit;  // the same --disk-size as its source
  if (b.disk_limit) store::btrfs::limit_exclusive(bp.dir, b.disk_limit);
  store::write_state(bp.state, b, fs::Sync::Volatile);
  launch::check_socket_paths(bp);
  launch::make_run_dir(bp, src.uid);
  return cfg;
}

Fd open_for_branch(const std::string& path, int flags, const char* what) {
  Fd fd(::open(path.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, 0640));
  if (!fd) throw_errno(std::string("open ") + what + " " + path);
  return fd;
}

// What a branch VMM gets from us (proto/control.h's order): a jailed VMM opens nothing by path.
proto::control::BranchTarget branch_target(const store::SandboxPaths& bp,
                                           const store::SandboxState& b, const store::VmConfig& cfg,
                                           bool network, std::vector<Fd>& fds) {
  const uid_t owner = b.uid ? b.uid : static_cast<uid_t>(-1);
  fds.push_back(open_for_branch(bp.vmm_log, O_WRONLY | O_CREAT | O_APPEND, "log"));
  fds.push_back(open_for_branch(bp.console_log, O_WRONLY | O_CREAT | O_APPEND, "console log"));
  fds.push_back(open_for_branch(cfg.rootfs, O_RDWR, "root disk"));
  if (!cfg.image_disk.empty()) fds.push_back(open_for_branch(cfg.image_disk, O_RDWR, "image disk"));
  fds.push_back(net::unix_bind(bp.control_sock));
  fds.push_back(net::unix_bind(bp.vsock_sock, {0600, owner, static_cast<gid_t>(owner)}));
  fds.push_back(open_for_branch(bp.run_dir, O_PATH | O_DIRECTORY, "run directory"));
  auto procs = launch::cgroup_procs_files(b.cgroup);
  for (const auto& f : procs) fds.push_back(open_for_branch(f, O_WRONLY, "cgroup"));
  return {b.id,
          bp.dir,
          bp.run_dir,
          store::vm_config_to_json(cfg),
          !cfg.image_disk.empty(),
          network,
          static_cast<uint32_t>(procs.size()),
          core::expires_at(b),
          b.on_expiry};
}

}  // namespace

namespace {

// Records the branch VMMs the source made (`got`, in the order of `made` and `out`): each one's
// pid (a jailed one's from its control socket: the pid the source reports is in its own PID
// namespace), a reference to it in `vmms` (to kill on failure), and its state, running.
void record_branches(const std::vector<proto::control::Branched>& got, bool jailed,
                     const std::vector<store::SandboxPaths>& made,
                     std::vector<store::SandboxState>& out, std::vector<proc::ProcessRef>& vmms) {
  if (got.size() != out.size())
    fail("the VMM made " + std::to_string(got.size()) + " branches, not " +
         std::to_string(out.size()));
  for (size_t i = 0; i < got.size(); i++) {
    pid_t pid = jailed ? launch::served_by(made[i].control_sock) : static_cast<pid_t>(got[i].pid);
    out[i].pid = pid;
    out[i].pid_start_time = proc::start_time(pid).value_or(0);
    if (auto ref = proc::ProcessRef::open(pid, out[i].pid_start_time))
      vmms.push_back(std::move(*ref));
    else
      fail("the VMM of branch " + out[i].id + " exited at once", "see " + made[i].vmm_log);
    out[i].status = store::Status::Running;
    store::write_state(made[i].state, out[i], fs::Sync::Volatile);
  }
}

// Undoes a failed branch of `id`: kills the branch VMMs made so far (the source VMM reaps them),
// and removes each branch's cgroup, policy, run directory and subvolume. Logs what it cannot.
void undo_branches(const store::Context& ctx, const std::string& id,
                   const std::vector<proc::ProcessRef>& vmms,
                   const std::vector<store::SandboxPaths>& made,
                   const std::vector<std::string>& ids) {
  for (const auto& v : vmms) {
    try {
      v.signal(SIGKILL);
      v.wait_exit(2000);
    } catch (const Error& cleanup) {
      log::error("branch " + id + ": " + cleanup.what());
    }
  }
  for (size_t i = 0; i < made.size(); i++) {
    const auto& bp = made[i];
    try {
      if (fs::exists(bp.state)) launch::remove_sandbox_cgroup(store::read_state(bp.state).cgroup);
      core::set_policy(ctx, ids[i], std::nullopt);
      fs::remove_tree(bp.run_dir);
      store::remove_store_tree(bp.dir);
    } catch (const Error& cleanup) {
      log::error("branch " + id + ": cleanup failed: " + cleanup.what());
    }
  }
}

// The branches themselves (branch_sandbox's first half), of either engine.
std::vector<store::SandboxState> make_branches(const store::Context& ctx, const std::string& id,
                                               const BranchOptions& opts) {
  std::vector<store::SandboxPaths> made;  // subvolumes created so far, removed on failure
  std::vector<proc::ProcessRef> vmms;  // branch VMMs (children of the source's), killed on failure
  std::vector<std::string> ids;        // made[i] is ids[i]'s
  try {
    proc::SignalGuard sig;
    ids = branch_ids(ctx, opts);
    // The branches' network: --net if given, else the source's policy (read before the pause).
    std::optional<egress::Policy> policy =
        opts.net.empty() ? core::sandbox_policy(ctx, id) : core::parse_net_flag(opts.net);
    std::vector<store::SandboxState> out;
    core::LockedSandbox s = core::lock_sandbox(ctx, id);
    if (s.observed != store::Status::Running && s.observed != store::Status::Paused)
      wrong_status(s, "branch");
    store::HostConfig hc = store::load_host_config(ctx.root);
    if (s.st.engine == "gvisor") return branch_gvisor_sandbox(ctx, hc, s, ids, policy, opts);
    if (!store::btrfs::is_subvolume(s.p.dir))
      fail("sandbox " + id + " was made before the btrfs store and cannot be branched",
           "checkpoint it and make a new sandbox, or recreate it");
    const bool was_running = s.observed == store::Status::Running;
    std::vector<store::SandboxLock> locks;
    using Clock = std::chrono::steady_clock;
    auto t0 = Clock::now();
    auto ms = [](Clock::time_point a, Clock::time_point b) {
      return std::to_string(std::chrono::duration<double, std::milli>(b - a).count());
    };
    Clock::time_point t_paused, t_cloned, t_forked;
    bool source_resumed = false;  // by the VMM, right after its forks
    try {
      core::vmm_op(s.p, proto::control::PauseRequest{.sync = true},
                   kPauseTimeoutMs);  // parked, disk flushed
      t_paused = Clock::now();
      proto::control::BranchRequest req;
      req.resume = was_running;  // the source runs again once the forks exist
      std::vector<Fd> fds;
      for (const auto& bid : ids) {
        store::SandboxPaths bp = store::sandbox_paths(ctx.root, bid);
        clone_source(s.p, bp);
        made.push_back(bp);
        locks.emplace_back(bp.lock);
        store::SandboxState b;
        b.id = bid;
        out.push_back(b);
        if (opts.ttl_ms) core::set_expiry(out.back(), opts.ttl_ms, opts.on_expiry);
        store::VmConfig cfg = prepare_branch(hc, bp, s.st, out.back());
        core::set_policy(ctx, bid,
                         policy);  // before its VMM runs: its Hello starts the guest's proxy
        req.targets.push_back(branch_target(bp, out.back(), cfg, policy.has_value(), fds));
      }
      sig.check();
      t_cloned = Clock::now();
      std::vector<int> raw;
      for (const auto& fd : fds) raw.push_back(fd.get());
      auto r = core::vmm_op(s.p, req, kBranchTimeoutMs, raw);
      fds.clear();  // the branches have theirs
      t_forked = Clock::now();
      source_resumed = r.resumed;
      record_branches(r.branches, s.st.uid != 0, made, out, vmms);
    } catch (...) {
      try {
        if (was_running) core::vmm_op(s.p, proto::control::ResumeRequest{}, kPauseTimeoutMs);
      } catch (const Error& cleanup) {
        log::error("branch " + id + ": could not resume the source: " + cleanup.what());
      }
      throw;
    }
    if (was_running && !source_resumed)
      core::vmm_op(s.p, proto::control::ResumeRequest{}, kPauseTimeoutMs);
    if (policy && !out.empty())
      core::ensure_network(ctx, out.front().id);  // one sync serves them all
    if (!out.empty() && core::needs_reaper(out.front())) core::ensure_reaper(ctx);
    auto t_end = Clock::now();
    log::info("branch " + id + " into " + std::to_string(out.size()) + ": pause " +
              ms(t0, t_paused) + " ms, clones and records " + ms(t_paused, t_cloned) +
              " ms, fork " + ms(t_cloned, t_forked) + " ms, records and resume " +
              ms(t_forked, t_end) + " ms");
    return out;
  } catch (Error& e) {
    undo_branches(ctx, id, vmms, made, ids);
    e.add_context("branch sandbox " + id);
    throw;
  }
}

}  // namespace

std::vector<store::SandboxState> branch_sandbox(const store::Context& ctx, const std::string& id,
                                                const BranchOptions& opts) {
  proc::SignalGuard sig;  // a signal while grants are copied removes the branches too
  std::vector<store::SandboxState> out = make_branches(ctx, id, opts);
  if (!opts.keep_secrets) return out;
  try {
    for (const auto& b : out) {
      sig.check();
      cred::copy_grants(ctx, id, b.id);
      core::install_sandbox_ca(ctx, b.id);  // its bindings' CA is its own, not the source's
    }
  } catch (Error& e) {
    for (const auto& b : out) {
      try {
        core::destroy_sandbox(ctx, b.id, /*force=*/true);
      } catch (const Error& cleanup) {
        log::error("branch " + b.id + ": could not remove it: " + cleanup.what());
      }
    }
    e.add_context("branch sandbox " + id);
    throw;
  }
  return out;
}

}  // namespace space::ops
