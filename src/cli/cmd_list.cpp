// `space list`: a table of sandboxes (ID STATUS ENGINE PID CREATED CPUS MEMORY IMAGE EXPIRES), or
// with
// --format json an array of their state objects. The status is the observed one (a dead VMM shows
// stopped).
#include <cstdio>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/table.h"
#include "core/sandbox.h"
#include "util/json.h"

namespace space::cli {

void register_list(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("list", "List sandboxes");
  cmd->fallthrough();  // global flags (--format, --root, ...) may follow the command
  cmd->alias("ls");
  cmd->callback([&g] {
    auto all = core::list_sandboxes(g.context());
    if (g.json()) {
      json::Value arr = json::Value::array();
      for (const auto& s : all) arr.push_back(store::state_to_json(s));
      print_json(arr, 2);
      return;
    }
    std::vector<std::vector<std::string>> rows = {
        {"ID", "STATUS", "ENGINE", "PID", "CREATED", "CPUS", "MEMORY", "IMAGE", "EXPIRES"}};
    for (const auto& s : all) {
      bool live = store::claims_vmm(s.status, s.pid);
      rows.push_back({s.id, store::status_name(s.status), s.engine,
                      live && s.pid ? std::to_string(s.pid) : "-", s.created,
                      std::to_string(s.vcpus), std::to_string(s.memory_mib) + "MiB",
                      s.image.empty() ? "-" : s.image,
                      s.expires.empty() ? "-" : s.expires + " (" + s.on_expiry + ")"});
    }
    std::printf("%s", format_table(rows).c_str());
  });
}

}  // namespace space::cli
