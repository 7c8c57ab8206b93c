// Hidden `space __egress`: the network broker daemon (egress/broker.h), started on demand by the
// VMMs whose guests open connections. Not for users.
#include "cli/app.h"
#include "egress/broker.h"
#include "store/config.h"

namespace space::cli {

void register_egress(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("__egress", "");
  cmd->group("");                                // an empty group hides it from --help
  auto* opts = g.hold<egress::BrokerOptions>();  // freed with GlobalOptions
  cmd->add_option("--ready-fd", opts->ready_fd, "fd to report readiness on");
  cmd->callback([&g, opts] {
    opts->root = g.root;
    opts->max_per_sandbox = int(store::load_host_config(g.root).net_max_connections);
    g.exit_code = egress::egress_main(*opts);
  });
}

}  // namespace space::cli
