// `space exec [-i] [-t] [-e K=V]... [-w DIR] [-u UID[:GID]] [--timeout S] ID -- CMD [ARG...]`:
// runs a command in a running sandbox with our stdio and returns its exit code (128+N for
// signal N, 124 timeout, 126 cannot execute, 127 not found; 125 is space's own error).
#include "cli/app.h"
#include "cli/exec_flags.h"
#include "ops/exec.h"

namespace space::cli {

namespace {
struct ExecCmdFlags {
  ExecFlags exec;
  std::string id;
};
}  // namespace

void register_exec(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "exec", "Run a command in a running sandbox");
  auto* f = g.hold<ExecCmdFlags>();  // freed with GlobalOptions
  add_exec_flags(cmd, &f->exec);
  cmd->add_option("id", f->id, "Sandbox id")->required();
  cmd->add_option("command", f->exec.command, "The command and its arguments, after --")
      ->required();
  cmd->callback([&g, f] {
    finish_exec_flags(&f->exec);
    auto r = ops::exec_in_sandbox(g.context(), f->id, f->exec.opts);
    g.exit_code = report_exec(r, f->exec);
  });
}

}  // namespace space::cli
