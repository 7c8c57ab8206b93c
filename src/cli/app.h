// The command table. Each cmd_<name>.cpp defines one register_<name>() that adds its CLI11
// subcommand to the app, parses its flags into a struct, and on callback makes one call into
// src/core (the space_core library) and prints the result. Global flags live in GlobalOptions.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "store/context.h"
#include "util/json.h"

namespace space::cli {

struct GlobalOptions {
  std::string root;  // --root / $SPACE_ROOT / /var/lib/space
  std::string log_level = "warn";
  std::string log_format = "text";
  std::string format = "text";  // --format text|json
  int exit_code = 0;            // set by a command's callback; main returns it

  // The core layers' view of these flags: the one place a command's store::Context is made.
  store::Context context() const { return {root, log_level, log_format}; }
  // Whether --format json was asked for.
  bool json() const { return format == "json"; }

  // A T that the command tree's options and callbacks point into, kept as long as this
  // GlobalOptions (which outlives parsing).
  template <typename T>
  T* hold() {
    auto p = std::make_shared<T>();
    T* raw = p.get();
    held_.push_back(std::move(p));
    return raw;
  }

 private:
  std::vector<std::shared_ptr<void>> held_;
};

// Prints `v` and a newline on stdout: compact on one line, or pretty with `indent` spaces (the
// one way a command prints its --format json result).
void print_json(const json::Value& v, int indent = 0);

// A command `name` under `parent` (the app, or a command with subcommands), whose global flags
// may also follow it (`space pause ID --format json`).
CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& description);
// A hidden command (`space __vmm`): started by space itself, not for users, not in --help.
CLI::App* add_hidden_command(CLI::App& app, const std::string& name);

// Builds the whole command tree into `app`; `g` receives global flags and the exit code.
void build_app(CLI::App& app, GlobalOptions& g);
// The same for one run with this command line: the global flags and only the command it names
// (every command for `completion` and for top-level help). Throws Error "unknown command 'X'",
// listing the commands, when the name is not one.
void build_app_for(CLI::App& app, GlobalOptions& g, int argc, const char* const* argv);
// The command a command line names: its first argument that is not a global flag or a global
// flag's value; "" when there is none.
std::string invoked_command(int argc, const char* const* argv);

// One per command file.
void register_vmm(CLI::App& app, GlobalOptions& g);
void register_gvisor(CLI::App& app, GlobalOptions& g);
void register_create(CLI::App& app, GlobalOptions& g);
void register_destroy(CLI::App& app, GlobalOptions& g);
void register_list(CLI::App& app, GlobalOptions& g);
void register_state(CLI::App& app, GlobalOptions& g);
void register_check(CLI::App& app, GlobalOptions& g);
void register_exec(CLI::App& app, GlobalOptions& g);
void register_run(CLI::App& app, GlobalOptions& g);
void register_template(CLI::App& app, GlobalOptions& g);
void register_image(CLI::App& app, GlobalOptions& g);
void register_pause(CLI::App& app, GlobalOptions& g);
void register_resume(CLI::App& app, GlobalOptions& g);
void register_checkpoint(CLI::App& app, GlobalOptions& g);
void register_branch(CLI::App& app, GlobalOptions& g);
void register_secret(CLI::App& app, GlobalOptions& g);
void register_grant(CLI::App& app, GlobalOptions& g);
void register_revoke(CLI::App& app, GlobalOptions& g);
void register_credd(CLI::App& app, GlobalOptions& g);
void register_egress(CLI::App& app, GlobalOptions& g);
void register_net(CLI::App& app, GlobalOptions& g);
void register_forward(CLI::App& app, GlobalOptions& g);
void register_cp(CLI::App& app, GlobalOptions& g);
void register_completion(CLI::App& app, GlobalOptions& g);
void register_stats(CLI::App& app, GlobalOptions& g);
void register_expire(CLI::App& app, GlobalOptions& g);
void register_pool_fill(CLI::App& app, GlobalOptions& g);
void register_mcp(CLI::App& app, GlobalOptions& g);

}  // namespace space::cli
