// guest-init: the static PID 1 of every space guest, and its agent on vsock port 1024.
//
// As PID 1 it mounts the API filesystems, takes its hostname from `space.id=` on the kernel
// command line, sets PATH/HOME for children, brings lo up, listens on vsock and prints
// "guest-init: ready (uptime N ms)" on the console. From then on the main thread only waits in
// poll(): it accepts connections, reaps every zombie in the guest (SIGCHLD via signalfd) and
// runs the poweroff sequence. No fork, no exec and no timer at startup: under a PVM host guest
// kernel code is interpreted, so boot is kept to about two dozen syscalls.
//
// Threading: one thread per host connection, blocking I/O. Connections are independent and
// long-lived (an exec streams stdio for as long as its process runs), so straight-line code per
// connection is simpler and safer than a shared state machine, a slow connection (a large file
// write, a stalled peer) cannot delay another or the reaping, and a thread costs a few syscalls,
// nothing next to the fork+exec it will usually serve. The main thread keeps reaping and
// shutdown; children's statuses reach their owning connection through the Reaper registry.
//
// PID 1 must never exit (the kernel would panic): every error is logged to the console and
// guest-init carries on, and an unexpected exception or std::terminate ends in reap_forever().
// As PID 1 argv is ignored (the kernel passes unknown boot parameters there). When not PID 1,
// `guest-init --serve-unix PATH [--id ID] [--cred-unix PATH] [--egress-unix PATH --proxy-port N]`
// serves the same protocol on a Unix socket with no mounts and no reboot (Poweroff makes it exit
// 0), fetches secrets from the Unix socket --cred-unix instead of vsock, and runs its network
// proxy on 127.0.0.1:N towards --egress-unix, so the host side can be tested without a VM.
// Under the gVisor engine (`/sbin/init --gvisor --id ID`, PID 1 of a runsc sandbox whose root is
// the rootfs) the sandbox's spec has already made /proc, /sys, /dev, /tmp and /run and its
// hostname, and there is no vsock: guest-init dials the monitor's agent socket in
// proto::kGvisorHostDir (dialer.h), and its secret fetches and proxy find the other ports'
// sockets there. A user image arrives mounted at proto::kGvisorImageDir instead of on /dev/vdb,
// and is prepared as the root of every exec as in a VM. Powering off ends the sandbox by PID 1's
// exit.
#include <malloc.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "boot.h"
#include "cmdline.h"
#include "context.h"
#include "dialer.h"
#include "event_loop.h"
#include "listener.h"
#include "poweroff.h"
#include "proto/agent.h"
#include "signals.h"

using namespace space::guest;

namespace {

[[noreturn]] void on_terminate() noexcept {
  Console(2).log("fatal: std::terminate called");
  if (::getpid() != 1) ::_exit(70);
  if (::syscall(SYS_gettid) == 1) reap_forever();
  for (;;) ::pause();  // a connection thread: park it, the main thread keeps reaping
}

[[noreturn]] void pid1_main() noexcept {
  Context ctx;
  ctx.pid1 = true;
  try {
    space::Fd sigfd = block_signals();
    mount_api_filesystems(ctx.console);
    ensure_stdio();
    ctx.hostname = set_hostname_from_cmdline(ctx.console);
    set_child_env();
    bring_up_loopback();
    space::Fd listener;
    try {
      listener = listen_vsock(space::proto::kAgentPort);
    } catch (const std::exception& e) {
      ctx.console.log(std::string("no agent: ") + e.what());
    }
    ctx.console.log("ready (uptime " + std::to_string(uptime_ms()) + " ms)");
    run_event_loop(ctx, std::move(listener), std::move(sigfd));
  } catch (const std::exception& e) {
    ctx.console.log(std::string("fatal: ") + e.what());
  } catch (...) {
    ctx.console.log("fatal: unknown exception");
  }
  reap_forever();
}

// PID 1 of a gVisor sandbox: `--gvisor --id ID`.
[[noreturn]] void gvisor_main(int argc, char** argv) noexcept {
  Context ctx;
  ctx.pid1 = true;
  ctx.gvisor = true;
  ctx.hostname = std::string(kDefaultHostname);
  try {
    space::Fd sigfd = block_signals();
    ensure_stdio();
    for (int i = 2; i + 1 < argc; i++)
      if (std::string(argv[i]) == "--id" && valid_sandbox_id(argv[i + 1])) ctx.hostname = argv[++i];
    set_child_env();
    ctx.image.use_premounted(space::proto::kGvisorImageDir);
    start_dialers(ctx, space::proto::gvisor_port_socket(space::proto::kGvisorHostDir,
                                                        space::proto::kAgentPort));
    ctx.console.log("ready (gvisor, uptime " + std::to_string(uptime_ms()) + " ms)");
    run_event_loop(ctx, space::Fd(), std::move(sigfd));
  } catch (const std::exception& e) {
    ctx.console.log(std::string("fatal: ") + e.what());
  } catch (...) {
    ctx.console.log("fatal: unknown exception");
  }
  reap_forever();
}

int usage() {
  Console(2).log(
      "usage: guest-init --serve-unix PATH [--id ID] [--cred-unix PATH] [--egress-unix PATH "
      "--proxy-port N]  (PID 1 takes no arguments)");
  return 2;
}

int test_main(int argc, char** argv) {
  std::string path, id(kDefaultHostname), cred_unix, egress_unix;
  int proxy_port = 0;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--serve-unix" && i + 1 < argc)
      path = argv[++i];
    else if (a == "--id" && i + 1 < argc)
      id = argv[++i];
    else if (a == "--cred-unix" && i + 1 < argc)
      cred_unix = argv[++i];
    else if (a == "--egress-unix" && i + 1 < argc)
      egress_unix = argv[++i];
    else if (a == "--proxy-port" && i + 1 < argc)
      proxy_port = std::atoi(argv[++i]);
    else if (a == "--version") {
      Console(1).log(kAgentVersion);
      return 0;
    } else
      return usage();
  }
  if (path.empty()) return usage();
  if (!valid_sandbox_id(id)) {
    Console(2).log("invalid --id '" + id + "': want [a-z0-9][a-z0-9_.-]{0,63}");
    return 2;
  }
  Context ctx;
  ctx.hostname = id;
  ctx.cred_unix = cred_unix;
  ctx.proxy_options.egress_unix = egress_unix;
  ctx.proxy_options.port = static_cast<uint16_t>(proxy_port);
  try {
    space::Fd sigfd = block_signals();
    space::Fd listener = listen_unix(path);
    ctx.console.log("ready (serving " + path + ")");
    int rc = run_event_loop(ctx, std::move(listener), std::move(sigfd));
    ::unlink(path.c_str());
    ::_exit(rc);  // detached session threads may still hold ctx
  } catch (const std::exception& e) {
    ctx.console.log(std::string("error: ") + e.what());
    ::_exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::set_terminate(on_terminate);
  // One malloc arena: a per-thread arena would cost each connection thread extra mmaps and faults.
  ::mallopt(M_ARENA_MAX, 1);
  if (::getpid() == 1 && argc >= 2 && std::strcmp(argv[1], "--gvisor") == 0)
    gvisor_main(argc, argv);
  if (::getpid() == 1) pid1_main();
  return test_main(argc, argv);
}
