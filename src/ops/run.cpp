// `run`: create, exec, destroy. One SignalGuard spans all three, so SIGINT/SIGTERM/SIGHUP never
// end the process between steps: during create they abort it (create cleans up after itself),
// during the exec they are forwarded to the command (and we stop waiting for it after
// kRunGiveUpMs), and then the sandbox is destroyed whatever happened.
#include <cstdio>

#include "core/image_use.h"
#include "core/sandbox.h"
#include "ops/exec.h"
#include "util/error.h"
#include "util/log.h"
#include "util/process.h"

namespace space::ops {
namespace {
constexpr int kRunGiveUpMs = 10'000;
}  // namespace

agent::ExecResult run_sandbox(const store::Context& ctx, const RunOptions& opts,
                              const agent::StdioFds& io) {
  proc::SignalGuard sig;
  core::CreateOptions copts = opts.create;
  if (copts.id.empty()) copts.id = store::generate_id();
  store::SandboxState st = core::create_sandbox(ctx, copts);
  agent::ExecOptions eopts = opts.exec;
  if (!eopts.give_up_after_signal_ms) eopts.give_up_after_signal_ms = kRunGiveUpMs;
  agent::ExecResult result;
  std::optional<Error> failure;
  try {
    if (eopts.argv.empty()) {
      auto image = core::attached_image(store::sandbox_paths(ctx.root, st.id));
      if (!image) fail("no command given", "put the command after --, e.g. -- ls -l");
      eopts.argv = core::image_command(*image);
    }
    result = exec_in_sandbox(ctx, st.id, eopts, io);
  } catch (const Error& e) {
    failure = e;
  }
  if (opts.keep) {
    std::fprintf(stderr, "space: kept sandbox %s\n", st.id.c_str());
  } else {
    try {
      core::destroy_sandbox(ctx, st.id, /*force=*/true);
    } catch (Error& e) {
      if (!failure)
        failure = e;
      else
        log::error(std::string("run: ") + e.what());
    }
  }
  while (sig.take()) {
  }  // signals that arrived during the cleanup were for it; they must not kill us now
  if (failure) throw *failure;
  return result;
}

}  // namespace space::ops
