// Hidden `space __vmm ID`: the per-sandbox VMM process, started by `create`. Not for users.
#include "cli/app.h"
#include "vmm/vmm_main.h"

namespace space::cli {

void register_vmm(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("__vmm", "");  // empty description: hidden from help
  auto* opts = new vmm::VmmOptions;             // lives as long as the process
  cmd->add_option("id", opts->id)->required();
  cmd->add_option("--ready-fd", opts->ready_fd, "fd to report readiness on");
  cmd->callback([&g, opts] {
    opts->root = g.root;
    g.exit_code = vmm::vmm_main(*opts);
  });
}

}  // namespace space::cli
