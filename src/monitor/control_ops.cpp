// Control operations; see control_ops.h. A snapshot runs entirely inside one event-loop handler,
// so no device handler on the loop thread (vsock RX, which writes guest memory) can run between
// capturing device state and writing RAM: with the vCPUs parked, the two are consistent.
#include "monitor/control_ops.h"

#include <unistd.h>

#include <chrono>

#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "monitor/branch_fork.h"
#include "util/phase_log.h"
#include "vmm/snapshot.h"
#include "vmm/snapshot_memory.h"

namespace space::monitor {
namespace {

constexpr int kBranchTimeoutMs = 30000;

const char* status_of(const vmm::Machine& m) { return m.paused() ? "paused" : "running"; }

// Releases the vCPUs, then has the guest told (Hello: clock, entropy) on the event loop. Returns
// the time the release took.
std::chrono::microseconds resume_machine(ControlContext& ctx) {
  auto t0 = std::chrono::steady_clock::now();
  ctx.machine.resume();
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - t0);
  ctx.sync.kick();
  return us;
}

json::Value snapshot_op(ControlContext& ctx, const json::Value& req) {
  std::string dir = json::string_field(req, "dir");
  if (dir.empty() || dir[0] != '/') fail("snapshot: \"dir\" must be an absolute path");
  PhaseLog phases;
  auto pause_us = ctx.machine.pause();
  phases.mark("pause");
  fs::mkdir_p(dir, 0700);
  vmm::snapshot::Snapshot snap = ctx.machine.capture();
  phases.mark("capture");
  size_t vmstate_bytes = vmm::snapshot::write_vmstate(dir + "/" + vmm::snapshot::kVmstateFile, snap);
  phases.mark("vmstate");
  const memory::GuestMemory& mem = ctx.machine.memory();
  bool diff = false;
  auto ms = vmm::snapshot::write_memory_diff(dir + "/" + vmm::snapshot::kMemoryFile,
                                        {mem.host_base(), mem.size()}, ctx.memory_base, &diff);
  phases.mark("memory");
  ctx.machine.sync_disks();
  phases.mark("disk_sync");
  log::info("snapshot to " + dir + ": " + phases.summary() + "; vmstate " +
            std::to_string(vmstate_bytes) + " bytes, memory " +
            std::to_string(ms.data_bytes >> 10) + " KiB of " + std::to_string(ms.size >> 20) +
            " MiB" + (diff ? " (diff against " + ctx.memory_base.path + ")" : ""));

  json::Value r = json::Value::object();
  r.set("ok", true);
  r.set("status", status_of(ctx.machine));
  r.set("vmstate_bytes", static_cast<uint64_t>(vmstate_bytes));
  r.set("memory_bytes", ms.size);
  r.set("memory_data_bytes", ms.data_bytes);
  r.set("memory_diff", diff);
  r.set("pause_us", static_cast<int64_t>(pause_us.count()));
  json::Value t = json::Value::object();
  for (const auto& [name, v] : phases.phases()) t.set(name, v);
  t.set("total", phases.total_ms());
  r.set("ms", std::move(t));
  return r;
}

json::Value branch_op(ControlContext& ctx, const json::Value& req) {
  const json::Value& list = req.at("targets");
  if (!list.is_array()) fail("branch: \"targets\" must be an array");
  std::vector<BranchTarget> targets;
  for (const auto& t : list.as_array()) {
    BranchTarget b{json::string_field(t, "id"), json::string_field(t, "dir"),
                   json::string_field(t, "run_dir")};
    if (b.dir.empty() || b.dir[0] != '/' || b.run_dir.empty() || b.run_dir[0] != '/')
      fail("branch: \"dir\" and \"run_dir\" must be absolute paths");
    targets.push_back(std::move(b));
  }
  // "resume": true resumes the source as soon as the children exist, without waiting for
  // them to be ready: it is paused for the capture and the forks only.
  const json::Value* resume = req.find("resume");
  if (resume && !resume->is_bool()) fail("branch: \"resume\" must be true or false");
  const bool want_resume = resume && resume->as_bool();
  bool resumed = false;
  auto after_fork = [&] {
    if (!want_resume) return;
    resume_machine(ctx);
    resumed = true;
  };
  ForkTimings tm;
  auto made = fork_branches(ctx.machine, ctx.root, ctx.memory_base, targets, ctx.branches,
                            std::chrono::milliseconds(kBranchTimeoutMs), &tm, after_fork);
  log::info("branched into " + std::to_string(made.size()) + ": capture " +
            std::to_string(tm.capture_ms) + " ms, fork " + std::to_string(tm.fork_ms) +
            " ms, ready " + std::to_string(tm.ready_ms) + " ms" +
            (resumed ? " (source resumed after the forks)" : ""));
  json::Value r = json::Value::object();
  r.set("ok", true);
  r.set("status", status_of(ctx.machine));
  json::Value arr = json::Value::array();
  for (const auto& m : made) {
    json::Value b = json::Value::object();
    b.set("id", m.id);
    b.set("pid", static_cast<int64_t>(m.pid));
    arr.push_back(std::move(b));
  }
  r.set("branches", std::move(arr));
  r.set("resumed", resumed);
  json::Value t = json::Value::object();
  t.set("capture", tm.capture_ms);
  t.set("fork", tm.fork_ms);
  t.set("ready", tm.ready_ms);
  r.set("ms", std::move(t));
  return r;
}

}  // namespace

json::Value handle_control(ControlContext& ctx, const json::Value& req) {
  std::string op = json::string_field(req, "op");
  json::Value r = json::Value::object();
  if (op == "ping") {
    r.set("ok", true);
    r.set("status", status_of(ctx.machine));
    r.set("pid", static_cast<int64_t>(::getpid()));
  } else if (op == "pause") {
    auto us = ctx.machine.pause();
    log::info("paused in " + std::to_string(us.count()) + " us");
    if (const json::Value* sync = req.find("sync"); sync && sync->as_bool()) ctx.machine.sync_disks();
    r.set("ok", true);
    r.set("status", status_of(ctx.machine));
    r.set("pause_us", static_cast<int64_t>(us.count()));
  } else if (op == "resume") {
    auto us = resume_machine(ctx);
    r.set("ok", true);
    r.set("resume_us", static_cast<int64_t>(us.count()));
    r.set("status", status_of(ctx.machine));
  } else if (op == "snapshot") {
    return snapshot_op(ctx, req);
  } else if (op == "branch") {
    return branch_op(ctx, req);
  } else if (op == "stop") {
    ctx.stop_requested = true;
    ctx.loop.stop();
    r.set("ok", true);
  } else {
    fail("unknown control operation '" + op + "'");
  }
  return r;
}

}  // namespace space::monitor
