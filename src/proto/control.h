// The VMM's control protocol (a sandbox's control.sock), typed: one request struct per operation,
// each with its reply struct, one encoder and one decoder per direction, on the line envelope of
// rpc.h. The CLI's sandbox operations send these (launch/control_client.h); the VMM process
// decodes them and runs one handler per type (monitor/control_ops.h).
//   ping      -> status, pid
//   pause     [sync: also fdatasync the disks once parked] -> status, pause_us
//   resume    -> status, resume_us (then the VMM says Hello to guest-init, without waiting)
//   snapshot  dir (absolute, for messages), pagemap + descriptors: the directory, then (with
//             pagemap) the VMM's /proc/PID/pagemap -> status (stays paused, also on failure),
//             vmstate_bytes, memory_bytes, memory_data_bytes, memory_diff, pause_us,
//             ms {phase: ms, total}
//   branch    targets [{id, dir, run_dir, config, image, network, cgroup_fds,
//             expires_at, on_expiry}], resume + descriptors, per target in
//             order: vmm.log, console.log, root disk, image disk (with image), control socket and
//             vsock socket (bound, not listening), run directory, cgroup_fds cgroup.procs files
//             (the branch joins its own cgroup at once) -> status,
//             branches [{id, pid}] (pids in the source's PID namespace), resumed,
//             ms {capture, fork, ready}; requires a paused source
// A jailed VMM opens nothing by path, so whatever a request makes it use comes as descriptors
// (SCM_RIGHTS) with the request line; the counts above are checked.
//   stats     -> status, guest_clock_ns (the guest's uptime), running_since_ms (Unix ms when this
//             VMM started the guest), host_connections, guest_connections, vcpus
//   stop      -> {} and the VMM exits
//   adopt     id, [expires_at, on_expiry] -> pid: a gvisor pool member (core/pool.h), whose
//             files create has just moved to sandbox id's paths, becomes that sandbox; any
//             other monitor refuses it
// Decoders reject unknown operations, unknown request fields and fields of the wrong kind with
// an Error that names them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "util/json.h"

namespace space::proto::control {

// What a VMM reports of its guest: vCPUs running, or parked.
enum class RunState { Running, Paused };
const char* run_state_name(RunState s);

struct PingRequest {};
struct PingReply {
  RunState status = RunState::Running;
  int64_t pid = 0;
};

struct PauseRequest {
  bool sync = false;  // fdatasync the disk images once parked (a branch then copies them)
};
struct PauseReply {
  RunState status = RunState::Paused;
  int64_t pause_us = 0;
};

struct ResumeRequest {};
struct ResumeReply {
  RunState status = RunState::Running;
  int64_t resume_us = 0;
};

struct SnapshotRequest {
  std::string dir;       // absolute: receives vmstate and memory (its descriptor comes along)
  bool pagemap = false;  // a descriptor of the VMM's pagemap follows: memory may be a diff
};
// Descriptors a snapshot request carries.
inline size_t fd_count(const SnapshotRequest& r) {
  return r.pagemap ? 2 : 1;
}
struct SnapshotReply {
  RunState status = RunState::Paused;
  uint64_t vmstate_bytes = 0;
  uint64_t memory_bytes = 0;
  uint64_t memory_data_bytes = 0;
  bool memory_diff = false;  // memory was written as a diff against the mapped memory file
  int64_t pause_us = 0;
  std::vector<std::pair<std::string, double>> ms;  // phase -> milliseconds, "total" last
};

struct BranchTarget {
  std::string id;
  std::string dir;          // absolute: the branch's sandbox directory (for messages)
  std::string run_dir;      // absolute: its socket directory (for messages)
  json::Value config;       // its config.json (store/vm_config.h)
  bool image = false;       // an image disk descriptor is among its descriptors
  bool network = false;     // it has a network policy: its guest starts the proxy (proto::Hello)
  uint32_t cgroup_fds = 0;  // cgroup.procs files of its cgroup, last among its descriptors
  int64_t expires_at = 0;   // Unix s of its expiry (core/expiry.h), 0 = never
  std::string on_expiry;    // "destroy" or "checkpoint" (with expires_at)
};
// Descriptors each branch target brings, and their order.
constexpr size_t kBranchFdsBase = 6;  // vmm.log, console.log, root disk, control, vsock, run dir
constexpr uint32_t kMaxCgroupFds = 8;
inline size_t fd_count(const BranchTarget& t) {
  return kBranchFdsBase + (t.image ? 1 : 0) + t.cgroup_fds;
}
struct BranchRequest {
  std::vector<BranchTarget> targets;
  bool resume = false;  // resume the source as soon as the children exist
};
struct Branched {
  std::string id;
  int64_t pid = 0;
};
struct BranchReply {
  RunState status = RunState::Paused;
  std::vector<Branched> branches;
  bool resumed = false;
  double capture_ms = 0, fork_ms = 0, ready_ms = 0;
};

struct StatsRequest {};
struct StatsReply {
  RunState status = RunState::Running;
  uint64_t guest_clock_ns = 0;
  int64_t running_since_ms = 0;
  uint64_t host_connections = 0, guest_connections = 0;
  uint32_t vcpus = 0;
};

struct StopRequest {};
struct StopReply {};

struct AdoptRequest {
  std::string id;          // the sandbox the member becomes
  int64_t expires_at = 0;  // Unix s, 0 = never
  std::string on_expiry;   // with expires_at: "destroy" or "checkpoint"
};
struct AdoptReply {
  int64_t pid = 0;
};

using Request = std::variant<PingRequest, PauseRequest, ResumeRequest, SnapshotRequest,
                             BranchRequest, StopRequest, StatsRequest, AdoptRequest>;

// The reply type of each request type: ReplyOf<PingRequest> is PingReply.
template <class Req>
struct ReplyTo;
template <>
struct ReplyTo<PingRequest> {
  using type = PingReply;
};
template <>
struct ReplyTo<PauseRequest> {
  using type = PauseReply;
};
template <>
struct ReplyTo<ResumeRequest> {
  using type = ResumeReply;
};
template <>
struct ReplyTo<SnapshotRequest> {
  using type = SnapshotReply;
};
template <>
struct ReplyTo<BranchRequest> {
  using type = BranchReply;
};
template <>
struct ReplyTo<StopRequest> {
  using type = StopReply;
};
template <>
struct ReplyTo<StatsRequest> {
  using type = StatsReply;
};
template <>
struct ReplyTo<AdoptRequest> {
  using type = AdoptReply;
};
template <class Req>
using ReplyOf = typename ReplyTo<Req>::type;

// The operation's name on the wire ("ping", "pause", ...).
std::string_view op_name(const Request& r);

// A request line (newline-terminated).
std::string encode_request(const Request& r);
// The request a line carries; throws Error naming what is wrong.
Request decode_request(std::string_view line);

// A success reply line for each reply type.
std::string encode_reply(const PingReply& r);
std::string encode_reply(const PauseReply& r);
std::string encode_reply(const ResumeReply& r);
std::string encode_reply(const SnapshotReply& r);
std::string encode_reply(const BranchReply& r);
std::string encode_reply(const StopReply& r);
std::string encode_reply(const StatsReply& r);
std::string encode_reply(const AdoptReply& r);

// The reply a line carries: T is one of the reply types. Throws Error with the VMM's message
// (and hint) for an {"ok": false} reply, or naming what is malformed.
template <class T>
T decode_reply(std::string_view line);

}  // namespace space::proto::control
