// `branch`, the persisted path (see session.h). Under the source's lock: the source VMM snapshots
// itself into <source>/branch.tmp and stays paused (its disk flushed); each branch is a btrfs
// snapshot of the source's subvolume taken now, so its disk, memory and device state are one
// instant; then branch.tmp is removed from the source and the source resumes (if it was
// running). The source is paused only for the snapshot op plus N subvolume snapshots. Each
// branch then turns its copy of branch.tmp into its own checkpoint/ (plus a reflink of the disk,
// so that it can be resumed from its branch point if its VMM dies), gets a fresh config.json and
// state.json, and is restored in a new VMM with new sockets; the VMM resets vsock on restore.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "core/btrfs.h"
#include "core/sandbox.h"
#include "core/session.h"
#include "core/session_util.h"
#include "core/store.h"
#include "core/vm_config.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::core {

namespace {

constexpr int kPauseTimeoutMs = 10000;
constexpr int kSnapshotTimeoutMs = 300000;
constexpr uint32_t kMaxBranches = 64;

std::vector<std::string> branch_ids(const Context& ctx, const BranchOptions& o) {
  if (o.count < 1 || o.count > kMaxBranches)
    fail("--count " + std::to_string(o.count) + ": out of range 1.." + std::to_string(kMaxBranches));
  std::vector<std::string> ids;
  for (uint32_t i = 1; i <= o.count; i++) {
    std::string id = o.name.empty()   ? generate_id()
                     : o.count == 1 ? o.name
                                    : o.name + "-" + std::to_string(i);
    validate_id(id);
    if (fs::exists(sandbox_paths(ctx.root, id).dir))
      fail("sandbox " + id + " already exists", "pick another --name, or 'space destroy " + id + "'");
    ids.push_back(id);
  }
  return ids;
}

// Turns a fresh snapshot of the source into sandbox `b` (paths bp): its own checkpoint, logs,
// config and a "creating" record.
void prepare_branch(const SandboxPaths& bp, const SandboxState& src, SandboxState& b) {
  fs::remove_tree(bp.dir + "/checkpoint.tmp");
  std::string ck = checkpoint_dir(bp);
  fs::remove_tree(ck);  // the source's own checkpoint is not this branch's history
  if (::rename((bp.dir + "/branch.tmp").c_str(), ck.c_str()) != 0)
    throw_errno("rename " + bp.dir + "/branch.tmp to " + ck);
  fs::copy_file(bp.rootfs, ck + "/rootfs.ext4", 0600);
  ::unlink(bp.console_log.c_str());
  ::unlink(bp.vmm_log.c_str());
  VmConfig cfg = load_vm_config(bp.config);
  cfg.id = b.id;
  cfg.rootfs = bp.rootfs;
  save_vm_config(bp.config, cfg, fs::Sync::Volatile);
  b.status = "creating";
  b.created = rfc3339_now();
  b.template_name = src.template_name;
  b.parent = src.id;
  b.vcpus = src.vcpus;
  b.memory_mib = src.memory_mib;
  b.annotations = src.annotations;
  write_state(bp.state, b, fs::Sync::Volatile);
}

}  // namespace

std::vector<SandboxState> branch_sandbox(const Context& ctx, const std::string& id,
                                         const BranchOptions& opts) {
  std::vector<SandboxPaths> made;  // subvolumes created so far, removed on failure
  std::vector<proc::Child> vmms;   // killed on failure
  try {
    proc::SignalGuard sig;
    std::vector<std::string> ids = branch_ids(ctx, opts);
    std::vector<SandboxState> out;
    {
      LockedSandbox s = lock_sandbox(ctx, id);
      if (s.observed != "running" && s.observed != "paused") wrong_status(s, "branch");
      if (!btrfs::is_subvolume(s.p.dir))
        fail("sandbox " + id + " was made before the btrfs store and cannot be branched",
             "checkpoint it and make a new sandbox, or recreate it");
      const bool was_running = s.observed == "running";
      std::string tmp = s.p.dir + "/branch.tmp";
      fs::remove_tree(tmp);
      try {
        json::Value req = json::Value::object();
        req.set("dir", tmp);
        vmm_op(s.p, "snapshot", kSnapshotTimeoutMs, std::move(req));  // leaves it paused
        for (const auto& bid : ids) {
          SandboxPaths bp = sandbox_paths(ctx.root, bid);
          btrfs::snapshot(s.p.dir, bp.dir);
          made.push_back(bp);
        }
      } catch (...) {
        try {
          fs::remove_tree(tmp);
          if (was_running) vmm_op(s.p, "resume", kPauseTimeoutMs);
        } catch (const Error& cleanup) {
          log::error("branch " + id + ": could not undo: " + cleanup.what());
        }
        throw;
      }
      fs::remove_tree(tmp);
      if (was_running) vmm_op(s.p, "resume", kPauseTimeoutMs);
      for (size_t i = 0; i < made.size(); i++) {
        SandboxState b;
        b.id = ids[i];
        prepare_branch(made[i], s.st, b);
        out.push_back(b);
      }
    }
    for (size_t i = 0; i < made.size(); i++) {
      SandboxLock lock(made[i].lock);
      vmms.push_back(start_restored(ctx, made[i], out[i], checkpoint_dir(made[i]), sig));
      sig.check();
    }
    for (auto& v : vmms) v.release();
    return out;
  } catch (Error& e) {
    vmms.clear();  // SIGKILL + reap
    for (const auto& bp : made) {
      try {
        fs::remove_tree(bp.run_dir);
        remove_store_tree(bp.dir);
      } catch (const Error& cleanup) {
        log::error("branch " + id + ": cleanup failed: " + cleanup.what());
      }
    }
    e.add_context("branch sandbox " + id);
    throw;
  }
}

}  // namespace space::core
