// `space checkpoint ID`: writes a consistent checkpoint of a running or paused sandbox into its
// subvolume and stops its VMM (status checkpointed); `space resume ID` restores it.
#include <cstdio>

#include "cli/app.h"
#include "core/session.h"
#include "util/json.h"

namespace space::cli {

void register_checkpoint(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "checkpoint", "Save a sandbox to disk and stop its VMM");
  auto* id = g.hold<std::string>();  // freed with GlobalOptions
  cmd->add_option("id", *id, "Sandbox id")->required();
  cmd->callback([&g, id] {
    core::CheckpointStats cs;
    auto st = core::checkpoint_sandbox(g.context(), *id, &cs);
    if (g.json()) {
      json::Value v = json::Object{{"id", st.id},
                                   {"status", store::status_name(st.status)},
                                   {"memory_data_bytes", cs.memory_data_bytes},
                                   {"memory_diff", cs.memory_diff}};
      json::Value ms =
          json::Object{{"snapshot", cs.snapshot_ms}, {"disk", cs.disk_ms}, {"total", cs.total_ms}};
      v.set("ms", std::move(ms));
      print_json(v);
    }
  });
}

}  // namespace space::cli
