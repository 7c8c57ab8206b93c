// Sandbox statistics; see stats.h.
#include "report/stats.h"

#include <sys/stat.h>

#include <chrono>

#include "core/pool_members.h"
#include "core/sandbox.h"
#include "core/template.h"
#include "jail/cgroup.h"
#include "launch/control_client.h"
#include "store/paths.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"
#include "util/procfs.h"

namespace space::report {
namespace {

constexpr int kStatsTimeoutMs = 2000;

// Bytes allocated to the files in `dir` and in its checkpoint (not following links).
uint64_t allocated(const std::string& dir) {
  uint64_t total = 0;
  for (const std::string& sub : {std::string(), std::string("/checkpoint")}) {
    if (!fs::is_dir(dir + sub)) continue;
    for (const auto& name : fs::list_dir(dir + sub)) {
      struct stat st {};
      if (::lstat((dir + sub + "/" + name).c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
        total += uint64_t(st.st_blocks) * 512;
    }
  }
  return total;
}

template <class T>
json::Value or_null(const std::optional<T>& v) {
  return v ? json::Value(*v) : json::Value();
}

SandboxStats stats_of(const store::SandboxPaths& p, const store::SandboxState& st,
                      const jail::CgroupLayout& layout) {
  SandboxStats s;
  s.id = st.id;
  s.status = st.status;
  s.engine = st.engine;
  s.disk_bytes = allocated(p.dir);
  s.status_text = core::status_text(st);
  s.idle = core::idle_view(p, st,
                           std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count());
  if (!store::claims_vmm(st.status, st.pid)) return s;
  s.pid = st.pid;
  if (!st.cgroup.empty()) {
    jail::CgroupUsage u = jail::read_usage(layout, st.cgroup);
    s.cpu_ns = u.cpu_ns;
    s.memory_bytes = u.memory_bytes;
    s.memory_peak_bytes = u.memory_peak_bytes;
    s.memory_limit_bytes = u.memory_limit_bytes;
    s.pids = u.pids;
  }
  if (!s.cpu_ns) s.cpu_ns = proc::cpu_time_ns(st.pid);
  std::vector<int> pids = {st.pid};
  if (st.engine == "gvisor" && !st.cgroup.empty())  // runsc's sandbox and gofer
    for (int pid : jail::group_pids(layout, st.cgroup))
      if (pid != st.pid) pids.push_back(pid);
  for (int pid : pids) {
    if (auto m = proc::memory_use(pid)) {
      s.rss_bytes = s.rss_bytes.value_or(0) + m->rss_bytes;
      s.pss_bytes = s.pss_bytes.value_or(0) + m->pss_bytes;
    }
  }
  try {
    auto r = launch::control_call(p.control_sock, proto::control::StatsRequest{}, kStatsTimeoutMs);
    s.guest_uptime_ns = r.guest_clock_ns;
    s.running_since_ms = r.running_since_ms;
    s.host_connections = r.host_connections;
    s.guest_connections = r.guest_connections;
  } catch (const Error& e) {
    log::info("stats of " + st.id + ": " + e.what());
  }
  return s;
}

}  // namespace

std::vector<SandboxStats> sandbox_stats(const store::Context& ctx,
                                        const std::vector<std::string>& ids) {
  std::vector<store::SandboxState> states;
  if (ids.empty()) {
    states = core::list_sandboxes(ctx);
  } else {
    for (const auto& id : ids) states.push_back(core::sandbox_state(ctx, id));
  }
  jail::CgroupLayout layout = jail::detect_layout();
  std::vector<SandboxStats> out;
  for (const auto& st : states)
    out.push_back(stats_of(store::sandbox_paths(ctx.root, st.id), st, layout));
  return out;
}

std::vector<SandboxStats> pool_stats(const store::Context& ctx) {
  jail::CgroupLayout layout = jail::detect_layout();
  std::vector<SandboxStats> out;
  for (const auto& t : core::list_templates(ctx)) {
    if (!t.meta || t.meta->engine != "gvisor") continue;
    for (const auto& m : core::pool_members(ctx, t.name)) {
      if (!m.st) continue;  // being started
      store::SandboxState st = *m.st;
      st.status = store::observed_status(st);
      SandboxStats s = stats_of(m.p, st, layout);
      s.id = t.name + "/" + m.name;
      s.pool = t.name;
      out.push_back(std::move(s));
    }
  }
  return out;
}

json::Value stats_json(const SandboxStats& s) {
  json::Value v = json::Value::object();
  v.set("id", s.id);
  if (!s.pool.empty()) v.set("pool", s.pool);
  v.set("status", store::status_name(s.status));
  v.set("engine", s.engine);
  v.set("pid", s.pid ? json::Value(s.pid) : json::Value());
  v.set("cpu_ns", or_null(s.cpu_ns));
  v.set("rss_bytes", or_null(s.rss_bytes));
  v.set("pss_bytes", or_null(s.pss_bytes));
  v.set("memory_bytes", or_null(s.memory_bytes));
  v.set("memory_peak_bytes", or_null(s.memory_peak_bytes));
  v.set("memory_limit_bytes", or_null(s.memory_limit_bytes));
  v.set("pids", or_null(s.pids));
  v.set("disk_bytes", s.disk_bytes);
  v.set("guest_uptime_ns", or_null(s.guest_uptime_ns));
  v.set("running_since_ms", or_null(s.running_since_ms));
  v.set("host_connections", or_null(s.host_connections));
  v.set("guest_connections", or_null(s.guest_connections));
  if (s.idle.configured) {
    json::Value idle = json::Value::object();
    idle.set("asleep", s.idle.asleep);
    idle.set("unused_ms", s.idle.unused_ms);
    bool next = s.idle.next != core::IdleStep::None;
    idle.set("next", next ? json::Value(core::idle_step_name(s.idle.next)) : json::Value());
    idle.set("next_at",
             next ? json::Value(store::rfc3339((s.idle.next_at_ms + 999) / 1000)) : json::Value());
    v.set("idle", std::move(idle));
  } else {
    v.set("idle", json::Value());
  }
  return v;
}

}  // namespace space::report
