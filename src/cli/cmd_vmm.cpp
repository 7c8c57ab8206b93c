// Hidden `space __vmm ID ...`: the per-sandbox VMM process, started by `create` (and by `template
// build`, with --dir and --run-dir). Not for users. Its arguments are the typed launch contract
// of proto/vmm_args.h, which the launcher encoded: they are decoded by the same module, not by
// CLI11, so the two sides share one list of flags.
#include "cli/app.h"
#include "monitor/vmm_main.h"
#include "proto/vmm_args.h"

namespace space::cli {

void register_vmm(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_hidden_command(app, "__vmm");
  cmd->prefix_command();
  cmd->callback([&g, cmd] {
    monitor::VmmOptions opts;
    static_cast<proto::VmmArgs&>(opts) = proto::decode_vmm_args(cmd->remaining());
    opts.root = g.root;
    g.exit_code = monitor::vmm_main(opts);
  });
}

}  // namespace space::cli
