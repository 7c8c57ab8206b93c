// `space stats`: what each sandbox costs the host and how its guest is doing, from the kernel's
// own accounting where it has one (the sandbox's cgroup: CPU time, charged memory and its peak,
// processes), the VMM process (resident and proportional memory, /proc/PID/smaps_rollup), the
// store (bytes allocated to the sandbox's files, its checkpoint included, before sharing with
// its template) and the VMM itself (a "stats" control request: the guest's uptime by its
// kvmclock, when this VMM started it, connections to and from the guest). Fields a host or a
// stopped sandbox cannot give are null.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/idle.h"
#include "store/context.h"
#include "store/state.h"
#include "util/json.h"

namespace space::report {

struct SandboxStats {
  std::string id;    // for a pool member, "<template>/<member>"
  std::string pool;  // a gvisor pool member's template (core/pool.h); "" for a sandbox
  store::Status status = store::Status::Stopped;
  std::string engine = "vm";
  int pid = 0;
  std::optional<uint64_t> cpu_ns;  // the cgroup's CPU time, else the VMM process's
  // The VMM's; on gvisor, the monitor's and runsc's processes (the cgroup's) together.
  std::optional<uint64_t> rss_bytes, pss_bytes;
  std::optional<uint64_t> memory_bytes, memory_peak_bytes, memory_limit_bytes;  // the cgroup's
  std::optional<uint64_t> pids;
  uint64_t disk_bytes = 0;
  std::optional<uint64_t> guest_uptime_ns;
  std::optional<int64_t> running_since_ms;
  std::optional<uint64_t> host_connections, guest_connections;
  std::string status_text;  // "paused (idle)" when idleness put it to sleep (core/idle.h)
  core::IdleView idle;      // its idleness, when it has an idle pause or checkpoint
};

// The stats of sandboxes `ids` (empty: every sandbox, in list order). Throws if an id does not
// exist; a VMM that does not answer leaves its fields null (logged).
std::vector<SandboxStats> sandbox_stats(const store::Context& ctx,
                                        const std::vector<std::string>& ids);
// The same for every member of the gvisor warm pools (core/pool.h), by template then age: what
// the ready sandboxes cost while they wait.
std::vector<SandboxStats> pool_stats(const store::Context& ctx);
// {"id", "status", "pid", "cpu_ns", "rss_bytes", ... } with nulls for what is unknown (and
// "pool", the template, for a pool member; "idle": {"asleep", "unused_ms", "next", "next_at"} or
// null).
json::Value stats_json(const SandboxStats& s);

}  // namespace space::report
