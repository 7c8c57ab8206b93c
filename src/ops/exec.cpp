// exec_in_sandbox: check the sandbox, dial guest-init, send Hello and Exec in one write, read
// HelloReply, then hand the connection to bridge_exec. No lock is taken: execs run side by
// side, and a sandbox destroyed meanwhile only ends the connection (an Error, exit 125).
#include "ops/exec.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "agent/client.h"
#include "agent/exec_bridge.h"
#include "core/idle.h"
#include "core/image_use.h"
#include "core/inject.h"
#include "core/net.h"
#include "core/sandbox.h"
#include "cred/hooks.h"
#include "egress/client.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/terminal.h"

namespace space::ops {
namespace {

constexpr int kConnectTimeoutMs = 30'000;

int64_t us_since(std::chrono::steady_clock::time_point t0) {
  auto d = std::chrono::steady_clock::now() - t0;
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

void require_running(const store::SandboxPaths& p, const std::string& id) {
  core::require_sandbox(p, id);
  store::SandboxState st = store::read_state(p.state);
  store::Status observed = store::observed_status(st);
  if (observed == store::Status::Running) return;
  std::string status = store::status_name(observed);
  if (observed == store::Status::Paused || observed == store::Status::Checkpointed)
    fail("sandbox " + id + " is " + status + ", not running", "space resume " + id);
  fail("sandbox " + id + " is " + status + ", not running",
       "'space destroy " + id + "' removes it; 'space create' makes a new one");
}

// Dial + handshake errors, explained in terms of the sandbox.
[[noreturn]] void explain_connect_error(const Error& e, const std::string& id,
                                        const store::SandboxPaths& p) {
  if (e.err() == ENOENT || e.err() == ECONNREFUSED)
    throw Error("sandbox " + id + " is not running (its VMM does not answer): " + e.what(), e.err(),
                "'space state " + id + "' shows its status");
  if (e.err() == ECONNRESET || e.err() == ETIMEDOUT)
    throw Error("guest-init in sandbox " + id + " does not answer: " + e.what(), e.err(),
                "see " + p.console_log);
  throw Error(e.what(), e.err(), e.hint());
}

// A connection lost because the sandbox went away under the command (a destroy, a checkpoint or
// a pause from another shell, a dead VMM) is said so, instead of blaming guest-init. The VMM may
// still be on its way out when the connection drops (a destroy kills it, then removes the
// record), so a sandbox that still looks running is looked at again for up to a second.
void explain_if_gone(const Error& e, const std::string& id, const store::SandboxPaths& p) {
  const int err = e.err();
  if (err != ECONNRESET && err != EPIPE && err != ETIMEDOUT && err != ENOENT && err != ECONNREFUSED)
    return;
  for (int look = 0; look < 50; look++) {
    if (look > 0) ::usleep(20'000);
    if (!fs::exists(p.state))
      throw Error("sandbox " + id + " was destroyed while the command ran (" + e.what() + ")", err,
                  "'space list' shows the sandboxes there are");
    store::Status observed = store::Status::Running;
    try {
      observed = store::observed_status(store::read_state(p.state));
    } catch (const Error&) {
      continue;  // a record being rewritten
    }
    if (observed != store::Status::Running)
      throw Error("sandbox " + id + " became " + store::status_name(observed) +
                      " while the command ran (" + e.what() + ")",
                  err, "'space state " + id + "' shows its status");
  }
}

}  // namespace

agent::ExecResult exec_in_sandbox(const store::Context& ctx, const std::string& id,
                                  const agent::ExecOptions& opts, const agent::StdioFds& io) {
  const auto t0 = std::chrono::steady_clock::now();
  if (opts.argv.empty() || opts.argv[0].empty())
    fail("no command given", "space exec ID -- CMD [ARG...]");
  store::SandboxPaths p = store::sandbox_paths(ctx.root, id);
  store::ActivityHold use = core::use_sandbox(ctx, id);  // in use while it runs; woken if asleep
  require_running(p, id);
  agent::ExecOptions o = opts;
  o.sandbox = opts.hostname.empty() ? id : opts.hostname;
  // The helpers its guest may need, if one died since: a jailed VMM cannot start them.
  cred::ensure_helper_for(ctx, id);
  if (core::sandbox_policy(ctx, id)) {
    if (!egress::broker_running(ctx)) core::ensure_network(ctx, id);
    o.hello_flags |= proto::Hello::kNetwork;
    if (!o.no_proxy_env) {  // image Env, then these, then exec -e: later entries win
      std::vector<std::string> env = core::proxy_env();
      env.insert(env.end(), o.env.begin(), o.env.end());
      o.env = std::move(env);
    }
  }
  // A sandbox with bindings trusts its CA: its TLS clients are pointed at the bundle that holds
  // it (core/inject.h), under the user's own -e.
  if (std::vector<std::string> ca = core::ca_environment(ctx, id); !ca.empty()) {
    ca.insert(ca.end(), o.env.begin(), o.env.end());
    o.env = std::move(ca);
  }
  if (auto image = core::attached_image(p)) {
    core::apply_image_config(image->config, o);
    o.image = true;
  }
  std::vector<int> routed = opts.forward_signals;
  routed.push_back(SIGWINCH);
  proc::SignalGuard sig(routed);
  try {
    Fd sock;
    auto dl = net::Deadline::after_ms(kConnectTimeoutMs);
    dl.cancel_on(sig.fd());
    try {
      sock = agent::vsock_dial(p.vsock_sock, proto::kAgentPort, dl);
    } catch (const net::Cancelled&) {
      fail("interrupted by " + proc::signal_name(sig.take()) + " before the command started");
    } catch (const Error& e) {
      explain_connect_error(e, id, p);
    }
    const int64_t connect_us = us_since(t0);
    agent::ExecResult r = agent::exec_on_connection(sock.get(), o, io, sig);
    r.stats.connect_us = connect_us;
    r.stats.total_us = us_since(t0);
    return r;
  } catch (Error& e) {
    explain_if_gone(e, id, p);
    e.add_context("exec in sandbox " + id);
    throw;
  }
}

std::string describe_exit(const agent::ExecResult& r, const agent::ExecOptions& opts) {
  switch (r.status.kind) {
    case proto::ExitKind::NotFound:
    case proto::ExitKind::CannotExecute:
      return r.status.message;
    case proto::ExitKind::TimedOut: {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", opts.timeout_ms / 1000.0);
      std::string m = std::string("timed out after ") + secs + " s; the command was killed";
      return r.status.message.empty() ? m : m + " (" + r.status.message + ")";
    }
    default:
      return r.status.message;  // "" unless we stopped waiting after a signal
  }
}

std::string format_stats(const agent::ExecResult& r) {
  auto ms = [](int64_t us) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", static_cast<double>(us) / 1000.0);
    return std::string(b);
  };
  const int64_t guest = static_cast<int64_t>(r.stats.guest_us);
  return "exec stats: total_ms=" + ms(r.stats.total_us) + " connect_ms=" + ms(r.stats.connect_us) +
         " hello_ms=" + ms(r.stats.hello_us) + " guest_ms=" + ms(guest) +
         " host_overhead_ms=" + ms(r.stats.total_us - guest);
}

}  // namespace space::ops
