// `space list`: a table of sandboxes (ID STATUS PID CREATED CPUS MEMORY), or with --format json
// an array of their state objects. The status is the observed one (a dead VMM shows stopped).
#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/app.h"
#include "core/sandbox.h"
#include "util/json.h"

namespace space::cli {

void register_list(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("list", "List sandboxes");
  cmd->fallthrough();  // global flags (--format, --root, ...) may follow the command
  cmd->alias("ls");
  cmd->callback([&g] {
    auto all = core::list_sandboxes({g.root, g.log_level, g.log_format});
    if (g.format == "json") {
      json::Value arr = json::Value::array();
      for (const auto& s : all) arr.push_back(core::state_to_json(s));
      std::printf("%s\n", json::serialize(arr, 2).c_str());
      return;
    }
    std::vector<std::array<std::string, 6>> rows = {{"ID", "STATUS", "PID", "CREATED", "CPUS", "MEMORY"}};
    for (const auto& s : all) {
      bool live = s.status == "running" || s.status == "paused" || s.status == "creating";
      rows.push_back({s.id, s.status, live && s.pid ? std::to_string(s.pid) : "-", s.created,
                      std::to_string(s.vcpus), std::to_string(s.memory_mib) + "MiB"});
    }
    std::array<size_t, 6> width{};
    for (const auto& r : rows)
      for (size_t i = 0; i < r.size(); i++) width[i] = std::max(width[i], r[i].size());
    for (const auto& r : rows) {
      std::string line;
      for (size_t i = 0; i < r.size(); i++) {
        line += r[i];
        if (i + 1 < r.size()) line.append(width[i] - r[i].size() + 3, ' ');
      }
      std::printf("%s\n", line.c_str());
    }
  });
}

}  // namespace space::cli
