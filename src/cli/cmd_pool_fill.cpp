// Hidden `space __pool-fill TEMPLATE`: the detached refill of a gvisor template's warm pool
// (core/pool.h), started by a create from that template. Not for users: `space template pool
// NAME` does the same in the foreground.
#include "cli/app.h"
#include "core/pool.h"
#include "util/log.h"

namespace space::cli {

void register_pool_fill(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_hidden_command(app, "__pool-fill");
  auto* name = g.hold<std::string>();
  cmd->add_option("template", *name)->required();
  cmd->callback([&g, name] {
    core::PoolStatus s = core::fill_pool(g.context(), *name, /*wait=*/false);
    log::info("pool of " + s.template_name + ": " + std::to_string(s.ready) + " of " +
              std::to_string(s.wanted) + " ready" +
              (s.memory_note.empty() ? "" : " (" + s.memory_note + ")"));
  });
}

}  // namespace space::cli
