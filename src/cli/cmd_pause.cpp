// `space pause [--checkpoint] ID`: parks every vCPU of a running sandbox (status paused); with
// --checkpoint it writes a checkpoint to disk and stops the VMM instead (as `space checkpoint`).
#include <cstdio>

#include "cli/app.h"
#include "core/session.h"
#include "util/json.h"

namespace space::cli {

namespace {
struct PauseFlags {
  std::string id;
  bool checkpoint = false;
};
}  // namespace

void register_pause(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "pause", "Pause a running sandbox (every vCPU stops)");
  auto* f = g.hold<PauseFlags>();  // freed with GlobalOptions
  cmd->add_flag("--checkpoint", f->checkpoint,
                "Also write a checkpoint to disk and stop the VMM (see space checkpoint)");
  cmd->add_option("id", f->id, "Sandbox id")->required();
  cmd->callback([&g, f] {
    store::Context ctx = g.context();
    json::Value v = json::Value::object();
    v.set("id", f->id);
    if (f->checkpoint) {
      core::CheckpointStats cs;
      auto st = core::checkpoint_sandbox(ctx, f->id, &cs);
      v.set("status", store::status_name(st.status));
      v.set("ms", cs.total_ms);
    } else {
      int64_t us = 0;
      auto st = core::pause_sandbox(ctx, f->id, &us);
      v.set("status", store::status_name(st.status));
      v.set("pause_us", us);
    }
    if (g.json()) print_json(v);
  });
}

}  // namespace space::cli
