// Hidden `space __expire`: the expiry reaper (core/expiry.h), started by the commands that give a
// sandbox an expiry. Not for users.
#include "cli/app.h"
#include "ops/reaper.h"

namespace space::cli {

void register_expire(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_hidden_command(app, "__expire");
  auto* ready_fd = g.hold<int>();
  *ready_fd = -1;
  cmd->add_option("--ready-fd", *ready_fd, "fd to report readiness on");
  cmd->callback([&g, ready_fd] { g.exit_code = ops::reaper_main(g.context(), *ready_fd); });
}

}  // namespace space::cli
