// Bash completion for every command and flag, generated from the CLI11 command tree itself, so
// it cannot drift from what the parser accepts: `space completion bash` prints it, and the build
// writes it to share/bash-completion/completions/space for `cmake --install`. It completes
// subcommand names at each level, the flags of the command typed so far (with the global flags,
// which every command accepts), and, where a command takes sandbox ids, the ids `space list`
// shows; anything else falls back to file names. Hidden commands (empty group) are left out.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace space::cli {

// The bash script for `app` (the root of the tree), completing the command `program`.
std::string bash_completion(const CLI::App& app, const std::string& program);

}  // namespace space::cli
