// `space stats [ID...|--pool] [--follow [--interval S]]`: per sandbox (or gvisor pool member), CPU
// time, host memory (the VMM's RSS and PSS, the cgroup's charge and limit), disk allocated, the
// guest's uptime and the connections to and from it (report/stats.h). A table, or with --format
// json an array (with
// --follow, one array per line, every interval, until interrupted).
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/table.h"
#include "report/stats.h"
#include "store/store.h"
#include "util/error.h"
#include "util/json.h"
#include "util/process.h"

namespace space::cli {
namespace {

struct StatsFlags {
  std::vector<std::string> ids;
  bool pool = false;
  bool follow = false;
  double interval_s = 2;
};

std::string opt_size(const std::optional<uint64_t>& v) {
  return v ? store::human_size(*v) : "-";
}

std::string seconds(const std::optional<uint64_t>& ns) {
  if (!ns) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1fs", double(*ns) / 1e9);
  return b;
}

void print(const std::vector<report::SandboxStats>& all, bool json_lines,
           const std::string& format) {
  auto row = [](const report::SandboxStats& s) -> std::vector<std::string> {
    return {s.id,
            s.status_text,
            s.engine,
            seconds(s.cpu_ns),
            opt_size(s.rss_bytes),
            opt_size(s.pss_bytes),
            opt_size(s.memory_bytes),
            opt_size(s.memory_limit_bytes),
            store::human_size(s.disk_bytes),
            seconds(s.guest_uptime_ns),
            s.host_connections ? std::to_string(*s.host_connections) + " in, " +
                                     std::to_string(*s.guest_connections) + " out"
                               : "-",
            core::idle_text(s.idle)};
  };
  print_list(format == "json", all, report::stats_json,
             {"ID", "STATUS", "ENGINE", "CPU", "RSS", "PSS", "MEMORY", "LIMIT", "DISK", "UPTIME",
              "CONNECTIONS", "IDLE"},
             row, json_lines ? 0 : 2);
  std::fflush(stdout);
}

}  // namespace

void register_stats(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "stats", "Show what sandboxes use: CPU, memory, disk, uptime");
  auto* f = g.hold<StatsFlags>();
  cmd->add_option("ids", f->ids, "Sandbox ids (default: all)");
  cmd->add_flag("--pool", f->pool,
                "The gvisor warm pools' ready sandboxes instead (TEMPLATE/MEMBER), what they cost "
                "while they wait");
  cmd->add_flag("--follow,-f", f->follow, "Print again every interval until interrupted");
  cmd->add_option("--interval", f->interval_s, "Seconds between --follow samples (default 2)")
      ->check(CLI::Range(0.1, 3600.0));
  cmd->callback([&g, f] {
    store::Context ctx = g.context();
    if (f->pool && !f->ids.empty())
      fail("--pool shows the pools' members, not sandboxes", "drop the ids");
    auto sample = [&] {
      return f->pool ? report::pool_stats(ctx) : report::sandbox_stats(ctx, f->ids);
    };
    if (!f->follow) {
      print(sample(), false, g.format);
      return;
    }
    proc::SignalGuard sig;
    for (;;) {
      print(sample(), true, g.format);
      if (!g.json()) std::printf("\n");
      pollfd pf{sig.fd(), POLLIN, 0};
      if (::poll(&pf, 1, static_cast<int>(f->interval_s * 1000)) > 0) return;  // Ctrl-C
    }
  });
}

}  // namespace space::cli
