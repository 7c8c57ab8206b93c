// Control operations; see control_ops.h. A snapshot runs entirely inside one event-loop handler,
// so no device handler on the loop thread (vsock RX, which writes guest memory) can run between
// capturing device state and writing RAM: with the vCPUs parked, the two are consistent.
#include "monitor/control_ops.h"

#include <unistd.h>

#include <chrono>

#include "monitor/branch_fork.h"
#include "proto/control.h"
#include "proto/rpc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/phase_log.h"
#include "vmm/snapshot.h"
#include "vmm/snapshot_memory.h"

namespace space::monitor {
namespace {

namespace control = proto::control;
namespace rpc = proto::rpc;

constexpr int kBranchTimeoutMs = 30000;

control::RunState state_of(const vmm::Machine& m) {
  return m.paused() ? control::RunState::Paused : control::RunState::Running;
}

// Releases the vCPUs, then has the guest told (Hello: clock, entropy) on the event loop. Returns
// the time the release took.
std::chrono::microseconds resume_machine(ControlContext& ctx) {
  auto t0 = std::chrono::steady_clock::now();
  ctx.machine.resume();
  auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  ctx.sync.kick();
  return us;
}

// One handler per request type: the table std::visit dispatches through.
struct Handlers {
  ControlContext& ctx;
  std::vector<Fd>& fds;  // what came with the request

  control::PingReply operator()(const control::PingRequest&) const {
    return {state_of(ctx.machine), static_cast<int64_t>(::getpid())};
  }

  control::PauseReply operator()(const control::PauseRequest& req) const {
    auto us = ctx.machine.pause();
    log::info("paused in " + std::to_string(us.count()) + " us");
    if (req.sync) ctx.machine.sync_disks();
    return {state_of(ctx.machine), static_cast<int64_t>(us.count())};
  }

  control::ResumeReply operator()(const control::ResumeRequest&) const {
    auto us = resume_machine(ctx);
    return {state_of(ctx.machine), static_cast<int64_t>(us.count())};
  }

  // Pauses, writes vmstate and memory into the directory the request brought (memory as a diff
  // against the mapped memory file when there is one and the request brought our pagemap:
  // snapshot_memory.h), fdatasyncs the disk images and stays paused, also on failure: the caller
  // then sends resume or stop.
  control::SnapshotReply operator()(const control::SnapshotRequest& req) const {
    if (fds.size() != control::fd_count(req))
      fail("snapshot: " + std::to_string(control::fd_count(req)) + " descriptors expected, got " +
           std::to_string(fds.size()));
    const int dir = fds[0].get();
    const int pagemap = req.pagemap ? fds[1].get() : -1;
    PhaseLog phases;
    auto pause_us = ctx.machine.pause();
    phases.mark("pause");
    vmm::snapshot::Snapshot snap = ctx.machine.capture();
    phases.mark("capture");
    size_t vmstate_bytes = vmm::snapshot::write_vmstate(
        {dir, vmm::snapshot::kVmstateFile, req.dir + "/" + vmm::snapshot::kVmstateFile}, snap);
    phases.mark("vmstate");
    const memory::GuestMemory& mem = ctx.machine.memory();
    bool diff = false;
    auto ms = vmm::snapshot::write_memory_diff(
        {dir, vmm::snapshot::kMemoryFile, req.dir + "/" + vmm::snapshot::kMemoryFile},
        {mem.host_base(), mem.size()}, ctx.run.memory_base, pagemap, &diff);
    phases.mark("memory");
    ctx.machine.sync_disks();
    phases.mark("disk_sync");
    // Connections do not survive a restore: the restored guest sees them reset.
    const uint64_t open = ctx.machine.stats().open_connections;
    log::info("snapshot to " + req.dir + ": " + phases.summary() + "; " + std::to_string(open) +
              " vsock connections open; vmstate " + std::to_string(vmstate_bytes) +
              " bytes, memory " + std::to_string(ms.data_bytes >> 10) + " KiB of " +
              std::to_string(ms.size >> 20) + " MiB" +
              (diff ? " (diff against " + ctx.run.memory_base.path + ")" : ""));
    control::SnapshotReply r;
    r.status = state_of(ctx.machine);
    r.vmstate_bytes = vmstate_bytes;
    r.memory_bytes = ms.size;
    r.memory_data_bytes = ms.data_bytes;
    r.memory_diff = diff;
    r.pause_us = static_cast<int64_t>(pause_us.count());
    r.ms = phases.phases();
    r.ms.emplace_back("total", phases.total_ms());
    return r;
  }

  // Forks one branch VMM per target (branch_fork.h) from the paused machine, each with the
  // descriptors the request brought for it; with "resume" the source resumes as soon as the
  // children exist, without waiting for them to be ready.
  control::BranchReply operator()(const control::BranchRequest& req) const {
    size_t want = 0;
    for (const auto& t : req.targets) want += control::fd_count(t);
    if (fds.size() != want)
      fail("branch: " + std::to_string(want) + " descriptors expected, got " +
           std::to_string(fds.size()));
    bool resumed = false;
    auto after_fork = [&] {
      if (!req.resume) return;
      resume_machine(ctx);
      resumed = true;
    };
    ForkTimings tm;
    auto made = fork_branches(ctx.machine, ctx.run, req.targets, fds, ctx.branches,
                              std::chrono::milliseconds(kBranchTimeoutMs), &tm, after_fork);
    log::info("branched into " + std::to_string(made.size()) + ": capture " +
              std::to_string(tm.capture_ms) + " ms, fork " + std::to_string(tm.fork_ms) +
              " ms, ready " + std::to_string(tm.ready_ms) + " ms" +
              (resumed ? " (source resumed after the forks)" : ""));
    control::BranchReply r;
    r.status = state_of(ctx.machine);
    for (const auto& m : made) r.branches.push_back({m.id, static_cast<int64_t>(m.pid)});
    r.resumed = resumed;
    r.capture_ms = tm.capture_ms;
    r.fork_ms = tm.fork_ms;
    r.ready_ms = tm.ready_ms;
    return r;
  }

  control::StatsReply operator()(const control::StatsRequest&) const {
    auto st = ctx.machine.stats();
    control::StatsReply r;
    r.status = state_of(ctx.machine);
    r.guest_clock_ns = st.guest_clock_ns;
    r.running_since_ms = ctx.running_since_ms;
    r.host_connections = st.host_connections;
    r.guest_connections = st.guest_connections;
    r.vcpus = ctx.machine.vcpu_count();
    return r;
  }

  control::StopReply operator()(const control::StopRequest&) const {
    ctx.stop_requested = true;
    ctx.loop.stop();
    return {};
  }
  control::AdoptReply operator()(const control::AdoptRequest&) const {
    fail("only a gvisor pool member adopts a sandbox; this is a VM's VMM");
  }
};

}  // namespace

std::string handle_control_line(ControlContext& ctx, std::string_view line, std::vector<Fd>& fds) {
  return rpc::answer([&] {
    control::Request req = control::decode_request(line);
    return std::visit(
        [&](const auto& r) {
          return control::encode_reply(Handlers{ctx, fds}(r));
        },
        req);
  });
}

}  // namespace space::monitor
