// Hidden `space __gvisor ID`: a gVisor sandbox's monitor (monitor/gvisor_main.h), started by
// `create` and `resume` on the gvisor engine. Not for users.
#include "cli/app.h"
#include "monitor/gvisor_main.h"

namespace space::cli {

void register_gvisor(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_hidden_command(app, "__gvisor");
  auto* opts = g.hold<monitor::GvisorOptions>();
  cmd->add_option("id", opts->id)->required();
  cmd->add_option("--ready-fd", opts->ready_fd, "fd to report readiness on");
  cmd->add_option("--restore", opts->restore_dir, "restore runsc's checkpoint in this directory");
  cmd->add_option("--runsc", opts->runsc, "the runsc binary")->required();
  cmd->add_option("--platform", opts->platform, "runsc's platform");
  cmd->add_option("--cgroup", opts->cgroup, "the sandbox's cgroup, relative to each hierarchy");
  cmd->add_option("--expires-at", opts->expires_at, "Unix time the sandbox expires at");
  cmd->add_option("--on-expiry", opts->on_expiry, "destroy or checkpoint");
  cmd->add_option("--pool", opts->pool_template, "a pool member of this template (core/pool.h)");
  cmd->callback([&g, opts] {
    opts->root = g.root;
    g.exit_code = monitor::gvisor_main(*opts);
  });
}

}  // namespace space::cli
