// `space destroy [--force] ID...`: stops and removes sandboxes. Each id is handled on its own; a
// failure is reported and the rest still run, and the exit code is then 125.
#include <cstdio>

#include "cli/app.h"
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
  auto* cmd = app.add_subcommand("destroy", "Stop sandboxes and delete everything they own");
  cmd->fallthrough();  // global flags (--format, --root, ...) may follow the command
  auto* f = new DestroyFlags;  // lives as long as the process, like the CLI11 tree
  cmd->add_flag("--force,-f", f->force,
                "Kill the VMM at once (no polite stop) and remove the sandbox even if its state "
                "file is unreadable");
  cmd->add_option("id", f->ids, "Sandbox ids")->required();
  cmd->callback([&g, f] {
    if (f->ids.size() == 1) {
      core::destroy_sandbox({g.root, g.log_level, g.log_format}, f->ids[0], f->force);
      return;
    }
    for (const auto& id : f->ids) {
      try {
        core::destroy_sandbox({g.root, g.log_level, g.log_format}, id, f->force);
      } catch (const Error& e) {
        std::fprintf(stderr, "space: error: %s\n", e.what());
        if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
        g.exit_code = 125;
      }
    }
  });
}

}  // namespace space::cli
