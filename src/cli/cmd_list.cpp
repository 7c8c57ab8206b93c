// `space list`: a table of sandboxes (ID STATUS ENGINE PID CREATED CPUS MEMORY IMAGE EXPIRES IDLE),
// or with --format json an array of their state objects. The status is the observed one (a dead
// VMM shows stopped; "paused (idle)" and "checkpointed (idle)" when idleness put it to sleep,
// core/idle.h), and IDLE how long it has been unused and its next idle step.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/table.h"
#include "core/idle.h"
#include "core/sandbox.h"
#include "util/json.h"

namespace space::cli {

void register_list(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "list", "List sandboxes");
  cmd->alias("ls");
  cmd->callback([&g] {
    auto all = core::list_sandboxes(g.context());
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    auto row = [&](const store::SandboxState& s) -> std::vector<std::string> {
      bool live = store::claims_vmm(s.status, s.pid);
      auto idle = core::idle_view(store::sandbox_paths(g.context().root, s.id), s, now);
      return {s.id,
              core::status_text(s),
              s.engine,
              live && s.pid ? std::to_string(s.pid) : "-",
              s.created,
              std::to_string(s.vcpus),
              std::to_string(s.memory_mib) + "MiB",
              s.image.empty() ? "-" : s.image,
              s.expires.empty() ? "-" : s.expires + " (" + s.on_expiry + ")",
              core::idle_text(idle)};
    };
    print_list(
        g.json(), all,
        [&](const store::SandboxState& s) { return core::state_json(g.context(), s); },
        {"ID", "STATUS", "ENGINE", "PID", "CREATED", "CPUS", "MEMORY", "IMAGE", "EXPIRES", "IDLE"},
        row);
  });
}

}  // namespace space::cli
