// `space run [--template NAME | --cold] [--image NAME [--disk-size SIZE]] [--cpus N] [--memory MiB]
// [--kernel P] [--rootfs P] [--name ID] [--rm|--keep] [--secret SPEC]... [--copy H:G]...
// [--net none|allow=RULE,...] [--idle-pause D] [--idle-checkpoint D] [exec flags]
// [-- CMD [ARG...]]`: create a sandbox (as `create` does), run one command in it (with --image and
// no command, the image's Entrypoint and Cmd), destroy it (even on failure or SIGINT/SIGTERM,
// which are forwarded to the command first); returns the command's exit code.
#include "cli/app.h"
#include "cli/boot_flags.h"
#include "cli/content_flags.h"
#include "cli/exec_flags.h"
#include "cli/expiry_flags.h"
#include "ops/exec.h"
#include "store/config.h"

namespace space::cli {

namespace {
struct RunFlags {
  ExecFlags exec;
  ops::RunOptions run;
  BootFlags boot;
  IdleFlags idle;
  bool rm = false;
  ContentFlags content;
};
}  // namespace

void register_run(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "run", "Create a sandbox, run a command in it, destroy it");
  auto* f = g.hold<RunFlags>();  // freed with GlobalOptions
  cmd->add_option("--template", f->run.create.template_name,
                  "Template to restore (default: config.toml, else \"default\"; else a cold boot)");
  cmd->add_flag("--cold", f->run.create.cold, "Boot the kernel instead of restoring a template");
  f->boot.add(cmd, f->run.create.kernel, f->run.create.rootfs, ", for a cold boot");
  add_engine_option(cmd, f->run.create.engine);
  cmd->add_option("--image", f->run.create.image,
                  "Run inside this image (space image list); without a command, its "
                  "Entrypoint and Cmd");
  cmd->add_option(
      "--net", f->run.create.net,
      "Network: none (the default, or config.toml [net] allow), or allow=RULE[,RULE...]: names "
      "(pypi.org:443), wildcards (*.example.com), addresses or CIDRs (127.0.0.2:8080, 10.0.0.0/8)");
  cmd->add_option("--name", f->run.create.id, "Sandbox id (default: 12 random hex digits)");
  auto* rm = cmd->add_flag("--rm", f->rm, "Destroy the sandbox afterwards (the default)");
  cmd->add_flag("--keep", f->run.keep, "Keep the sandbox afterwards; its id goes to stderr")
      ->excludes(rm);
  f->content.add(cmd, "before the command runs");
  f->idle.add(cmd);
  add_exec_flags(cmd, &f->exec);
  cmd->add_option("command", f->exec.command,
                  "The command and its arguments, after -- (optional with --image)");
  cmd->callback([&g, f] {
    f->boot.apply(f->run.create.vcpus, f->run.create.memory_mib);
    finish_exec_flags(&f->exec, /*command_optional=*/!f->run.create.image.empty());
    f->run.exec = f->exec.opts;
    f->run.create.idle = f->idle.options();
    f->content.apply(f->run.create);
    auto r = ops::run_sandbox(g.context(), f->run);
    g.exit_code = report_exec(r, f->exec);
  });
}

}  // namespace space::cli
