// The command table: global flags, then one register_<name>() per command file. A run builds
// only the command its command line names (CLI11 would otherwise build every command's options at
// each start, a large part of the start-up of a short command such as `space state`).
#include "cli/app.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "proto/agent.h"
#include "util/error.h"
#include "util/log.h"

namespace space::cli {

namespace {

using Register = void (*)(CLI::App&, GlobalOptions&);

// Every top-level command, in the order `space --help` lists them, with its register function.
constexpr struct {
  const char* name;
  Register add;
} kCommands[] = {
    {"create", register_create},
    {"destroy", register_destroy},
    {"list", register_list},
    {"state", register_state},
    {"check", register_check},
    {"exec", register_exec},
    {"run", register_run},
    {"template", register_template},
    {"image", register_image},
    {"pause", register_pause},
    {"resume", register_resume},
    {"checkpoint", register_checkpoint},
    {"branch", register_branch},
    {"secret", register_secret},
    {"grant", register_grant},
    {"revoke", register_revoke},
    {"__vmm", register_vmm},
    {"__gvisor", register_gvisor},
    {"__credd", register_credd},
    {"__egress", register_egress},
    {"net", register_net},
    {"forward", register_forward},
    {"cp", register_cp},
    {"stats", register_stats},
    {"mcp", register_mcp},
    {"__expire", register_expire},
    {"__pool-fill", register_pool_fill},
    {"completion", register_completion},
};

// The global options that take a value (in the next argument unless written --name=value).
bool global_takes_value(std::string_view arg) {
  return arg == "--root" || arg == "--log-level" || arg == "--log-format" || arg == "--format";
}

void add_globals(CLI::App& app, GlobalOptions& g) {
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("space ") + SPACE_VERSION + " (agent protocol " +
                                        std::to_string(proto::kVersion) + ")");
  const char* env_root = std::getenv("SPACE_ROOT");
  g.root = env_root && *env_root ? env_root : "/var/lib/space";
  app.add_option("--root", g.root, "Run directory (default $SPACE_ROOT or /var/lib/space)")
      ->capture_default_str();
  std::string levels;
  for (const auto& n : log::level_names()) levels += (levels.empty() ? "" : "|") + n;
  app.add_option("--log-level", g.log_level, levels)->check(CLI::IsMember(log::level_names()));
  app.add_option("--log-format", g.log_format, "text|json")->check(CLI::IsMember({"text", "json"}));
  app.add_option("--format", g.format, "Output format: text|json")
      ->check(CLI::IsMember({"text", "json"}));
}

}  // namespace

CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& description) {
  CLI::App* cmd = parent.add_subcommand(name, description);
  cmd->fallthrough();  // global flags (--format, --root, ...) may follow the command
  return cmd;
}

CLI::App* add_hidden_command(CLI::App& app, const std::string& name) {
  CLI::App* cmd = app.add_subcommand(name, "");
  cmd->group("");  // an empty group hides it from --help
  return cmd;
}

void print_json(const json::Value& v, int indent) {
  std::printf("%s\n", json::serialize(v, indent).c_str());
}

void build_app(CLI::App& app, GlobalOptions& g) {
  add_globals(app, g);
  for (const auto& c : kCommands) c.add(app, g);
}

std::string invoked_command(int argc, const char* const* argv) {
  for (int i = 1; i < argc; i++) {
    std::string_view a = argv[i];
    if (a == "--") return "";
    if (a.empty() || a[0] != '-') return std::string(a);
    if (global_takes_value(a)) i++;  // its value
  }
  return "";
}

void build_app_for(CLI::App& app, GlobalOptions& g, int argc, const char* const* argv) {
  const std::string name = invoked_command(argc, argv);
  // A help flag before the command's name ("space --help create") is the top-level help.
  bool help = false;
  for (int i = 1; i < argc; i++) {
    std::string_view a = argv[i];
    if (a == "--" || a == name) break;
    if (a == "-h" || a == "--help" || a == "--help-all") help = true;
  }
  // The completion script covers every command; top-level help lists them all.
  if (name == "completion" || help) return build_app(app, g);
  add_globals(app, g);
  if (name.empty()) return;  // --version, or the "a subcommand is required" error
  for (const auto& c : kCommands)
    if (name == c.name) return c.add(app, g);
  std::string names;
  for (const auto& c : kCommands)
    if (c.name[0] != '_') names += std::string(names.empty() ? "" : ", ") + c.name;
  throw Error("unknown command '" + name + "'", EINVAL, "the commands are: " + names);
}

}  // namespace space::cli
