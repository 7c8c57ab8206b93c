// Running commands in a sandbox: `space exec` (exec_in_sandbox) and `space run` (run_sandbox).
// An exec is one vsock connection to guest-init: Hello and Exec are sent in one write, then the
// caller's stdin, stdout and stderr are bridged to the process's (exec_bridge.h) until the Exit
// frame, whose status becomes the exit code (proto::exit_code_of). SIGINT, SIGTERM and SIGHUP
// received meanwhile are forwarded to the process group in the guest; with a tty the caller's
// terminal is raw while attached and SIGWINCH becomes a Resize frame.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/exec_options.h"
#include "core/sandbox.h"
#include "proto/exec.h"
#include "store/context.h"

namespace space::ops {

// Runs opts.argv in running sandbox `id` with `io` as its stdio; a sandbox with an image runs it
// inside the image, with the image's config under opts (core/image_use.h). Throws Error (exit 125)
// if the sandbox does not exist or is not running, or the guest cannot be reached or breaks the
// protocol; a command that cannot start is a result (126/127), not an error.
agent::ExecResult exec_in_sandbox(const store::Context& ctx, const std::string& id,
                                  const agent::ExecOptions& opts, const agent::StdioFds& io = {});

struct RunOptions {
  core::CreateOptions create;
  agent::ExecOptions exec;
  bool keep = false;  // keep the sandbox afterwards (its id goes to stderr)
};

// Creates a sandbox, runs the command in it and destroys it, also when the exec fails or a
// signal arrives (the signal is forwarded first). Returns the exec's result.
agent::ExecResult run_sandbox(const store::Context& ctx, const RunOptions& opts,
                              const agent::StdioFds& io = {});

// What to tell the user about `r` on stderr ("" if the command ran and ended by itself), e.g.
// "exec nosuch: No such file or directory" or "timed out after 5 s: killed".
std::string describe_exit(const agent::ExecResult& r, const agent::ExecOptions& opts);
// The --stats line: host and guest times of `r` in milliseconds.
std::string format_stats(const agent::ExecResult& r);

}  // namespace space::ops
