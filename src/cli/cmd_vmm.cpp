// Hidden `space __vmm ID`: the per-sandbox VMM process, started by `create` (and by `template
// build`, with --dir and --run-dir). Not for users.
#include "cli/app.h"
#include "monitor/vmm_main.h"

namespace space::cli {

void register_vmm(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("__vmm", "");
  cmd->group("");                              // an empty group hides it from --help
  auto* opts = g.hold<monitor::VmmOptions>();  // freed with GlobalOptions
  cmd->add_option("id", opts->id)->required();
  cmd->add_option("--ready-fd", opts->ready_fd, "fd to report readiness on");
  cmd->add_option("--restore", opts->restore_dir, "resume the snapshot in this directory");
  cmd->add_option("--shared-memory", opts->shared_memory_dir,
                  "map this directory's memory file instead, if it holds the same snapshot");
  // A template build: the VMM's files and sockets live elsewhere than a sandbox's.
  auto* dir = cmd->add_option("--dir", opts->dir, "files here, not in store/sandboxes/ID");
  auto* run = cmd->add_option("--run-dir", opts->run_dir, "sockets here, not in <run base>/ID");
  dir->needs(run);
  run->needs(dir);
  // The jail, prepared by the launcher (core/launcher.h).
  cmd->add_option("--jail-uid", opts->jail_uid, "run jailed as this uid and gid");
  cmd->add_option("--jail-netns-fd", opts->jail_netns_fd, "join this network namespace");
  cmd->add_option("--jail-mntns-fd", opts->jail_mntns_fd,
                  "make the jail's mount namespace from this one (the jails' base)");
  cmd->add_option("--jail-placed-fd", opts->jail_placed_fd,
                  "wait for a byte here (in its cgroups) before mapping guest memory");
  cmd->add_option("--expires-at", opts->expires_at, "Unix time the sandbox expires at");
  cmd->add_option("--on-expiry", opts->on_expiry, "destroy or checkpoint");
  cmd->add_flag("--probe", opts->probe, "enter the jail if any, report and exit: no VM")
      ->needs(dir);
  cmd->callback([&g, opts] {
    opts->root = g.root;
    g.exit_code = monitor::vmm_main(*opts);
  });
}

}  // namespace space::cli
