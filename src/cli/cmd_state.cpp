// `space state ID`: the sandbox's state as JSON (the observed status, as list shows it, and its
// idleness: core/idle.h).
#include <cstdio>

#include "cli/app.h"
#include "core/idle.h"
#include "core/sandbox.h"
#include "util/json.h"

namespace space::cli {

void register_state(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "state", "Print a sandbox's state as JSON");
  auto* id = g.hold<std::string>();  // freed with GlobalOptions
  cmd->add_option("id", *id, "Sandbox id")->required();
  cmd->callback([&g, id] {
    auto s = core::sandbox_state(g.context(), *id);
    print_json(core::state_json(g.context(), s), 2);
  });
}

}  // namespace space::cli
