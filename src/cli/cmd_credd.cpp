// Hidden `space __credd`: the credential helper daemon (cred/helper.h), started on demand by the
// commands that need it and by VMMs. Not for users.
#include "cli/app.h"
#include "cred/helper.h"

namespace space::cli {

void register_credd(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_hidden_command(app, "__credd");
  auto* opts = g.hold<cred::HelperOptions>();  // freed with GlobalOptions
  cmd->add_option("--cred-dir", opts->cred_dir, "credential directory");
  cmd->add_option("--ready-fd", opts->ready_fd, "fd to report readiness on");
  cmd->callback([&g, opts] {
    opts->root = g.root;
    g.exit_code = cred::credd_main(*opts);
  });
}

}  // namespace space::cli
