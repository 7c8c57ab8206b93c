// Hidden `space __egress`: the network broker daemon (egress/broker.h), started on demand by the
// VMMs whose guests open connections. Not for users.
#include "cli/app.h"
#include "egress/broker.h"
#include "store/config.h"

namespace space::cli {

void register_egress(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_hidden_command(app, "__egress");
  auto* opts = g.hold<egress::BrokerOptions>();  // freed with GlobalOptions
  cmd->add_option("--ready-fd", opts->ready_fd, "fd to report readiness on");
  cmd->callback([&g, opts] {
    opts->root = g.root;
    auto config = store::load_host_config(g.root);
    opts->max_per_sandbox = int(config.net_max_connections);
    opts->audit_max_bytes = uint64_t{config.net_audit_max_mib} << 20;
    g.exit_code = egress::egress_main(*opts);
  });
}

}  // namespace space::cli
