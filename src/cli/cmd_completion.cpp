// `space completion bash`: prints the bash completion script for the whole command tree
// (cli/completion.h). The build installs its output; users can also `source <(space completion
// bash)`.
#include <cstdio>

#include "cli/app.h"
#include "cli/completion.h"

namespace space::cli {

void register_completion(CLI::App& app, GlobalOptions&) {
  auto* cmd = app.add_subcommand("completion", "Print a shell completion script");
  auto* bash = cmd->add_subcommand(
      "bash", "Bash: every command and flag, and sandbox ids (source it, or install it)");
  cmd->require_subcommand(1);
  bash->callback([&app] { std::fputs(bash_completion(app, "space").c_str(), stdout); });
}

}  // namespace space::cli
