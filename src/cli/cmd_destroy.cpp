// `space destroy [--force] ID...`: stops and removes sandboxes. Each id is handled on its own; a
// failure is reported and the rest still run, and the exit code is then 125.
#include <cstdio>

#include "cli/app.h"
#include "cli/errors.h"
#include "core/sandbox.h"
#include "util/error.h"

namespace space::cli {

namespace {
struct DestroyFlags {
  std::vector<std::string> ids;
  bool force = false;
};
}  // namespace

void register_destroy(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "destroy", "Stop sandboxes and delete everything they own");
  auto* f = g.hold<DestroyFlags>();  // freed with GlobalOptions
  cmd->add_flag("--force,-f", f->force,
                "Kill the VMM at once (no polite stop) and remove the sandbox even if its state "
                "file is unreadable");
  cmd->add_option("id", f->ids, "Sandbox ids")->required();
  cmd->callback([&g, f] {
    each_item(f->ids, g,
              [&](const std::string& id) { core::destroy_sandbox(g.context(), id, f->force); });
  });
}

}  // namespace space::cli
