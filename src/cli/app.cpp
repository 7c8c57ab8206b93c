// The command table: global flags, then one register_<name>() per command file.
#include "cli/app.h"

#include <cstdlib>
#include <string>

#include "proto/agent.h"

namespace space::cli {

void build_app(CLI::App& app, GlobalOptions& g) {
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("space ") + SPACE_VERSION + " (agent protocol " +
                                        std::to_string(proto::kVersion) + ")");
  const char* env_root = std::getenv("SPACE_ROOT");
  g.root = env_root && *env_root ? env_root : "/var/lib/space";
  app.add_option("--root", g.root, "Run directory (default $SPACE_ROOT or /var/lib/space)")
      ->capture_default_str();
  app.add_option("--log-level", g.log_level, "debug|info|warn|error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  app.add_option("--log-format", g.log_format, "text|json")->check(CLI::IsMember({"text", "json"}));
  app.add_option("--format", g.format, "Output format: text|json")
      ->check(CLI::IsMember({"text", "json"}));
  register_create(app, g);
  register_destroy(app, g);
  register_list(app, g);
  register_state(app, g);
  register_check(app, g);
  register_exec(app, g);
  register_run(app, g);
  register_template(app, g);
  register_image(app, g);
  register_pause(app, g);
  register_resume(app, g);
  register_checkpoint(app, g);
  register_branch(app, g);
  register_secret(app, g);
  register_grant(app, g);
  register_revoke(app, g);
  register_vmm(app, g);
  register_credd(app, g);
  register_egress(app, g);
  register_net(app, g);
  register_forward(app, g);
  register_cp(app, g);
  register_stats(app, g);
  register_expire(app, g);
  register_completion(app, g);
}

}  // namespace space::cli
