// The flags `space exec` and `space run` share (-i, -t, -e, --secret-env, -w, -u, --timeout and the
// hidden
// --stats), how they become agent::ExecOptions, and how an exec's result is reported: the
// reason on stderr when the command did not run or end by itself, the --stats line, and the
// exit code main() returns.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "ops/exec.h"

namespace space::cli {

struct ExecFlags {
  agent::ExecOptions opts;
  std::vector<std::string> env;         // -e K=V or -e K (the value of K here; skipped if unset)
  std::vector<std::string> secret_env;  // --secret-env VAR=NAME
  std::string user;                     // -u UID[:GID]
  double timeout_s = 0;                 // --timeout
  bool stats = false;                   // --stats (or SPACE_EXEC_STATS=1)
  std::vector<std::string> command;     // CMD [ARG...], possibly led by "--"
};

// Adds the shared flags and the trailing CMD [ARG...] positional to `cmd`.
void add_exec_flags(CLI::App* cmd, ExecFlags* f);
// Fills f->opts from the parsed flags. Throws Error on a bad -u, -e or --timeout.
void finish_exec_flags(ExecFlags* f, bool command_optional = false);
// Prints what the user must know about `r` (and the stats if asked) to stderr; returns the code.
int report_exec(const agent::ExecResult& r, const ExecFlags& f);

}  // namespace space::cli
