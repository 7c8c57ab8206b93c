// The per-sandbox VMM process. It reads the VM's config.json, builds and boots the Machine,
// serves the control socket on its event loop, and tells `create` through the ready pipe
// ("ok" or "error: <why>"). It runs until the guest stops (reset, fault, error), a control
// "stop" arrives, or it gets SIGTERM/SIGINT. On the way out it stops the vCPUs, removes its
// sockets and, if the guest stopped by itself, records status "stopped" in state.json when the
// sandbox lock is free (a destroy in progress holds it and does its own bookkeeping).
#include "vmm/vmm_main.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <chrono>

#include "core/paths.h"
#include "core/state.h"
#include "core/vm_config.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "vmm/control_server.h"
#include "vmm/host.h"
#include "vmm/machine.h"

namespace space::vmm {
namespace {

void report(const Fd& ready, const std::string& line) {
  if (!ready) return;
  int fd = ready.get();
  std::string l = line + "\n";
  ssize_t n = ::write(fd, l.data(), l.size());
  (void)n;
}

// Blocks the signals the event loop takes through a signalfd (before any thread starts, so
// every thread inherits the mask).
Fd block_and_watch_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) throw_errno("pthread_sigmask");
  Fd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd) throw_errno("signalfd");
  ::signal(SIGPIPE, SIG_IGN);
  return fd;
}

void mark_stopped(const core::SandboxPaths& paths) {
  try {
    core::SandboxLock lock(paths.lock, /*nonblocking=*/true);
    if (!lock.held()) return;
    core::SandboxState st = core::read_state(paths.state);
    if (st.pid != ::getpid()) return;  // not ours any more
    st.status = "stopped";
    st.pid = 0;
    st.pid_start_time = 0;
    core::write_state(paths.state, st);
  } catch (const Error& e) {
    log::warn(std::string("could not record the stopped state: ") + e.what());
  }
}

}  // namespace

int vmm_main(const VmmOptions& opts) {
  Fd ready(opts.ready_fd);  // the pipe `create` waits on; owned from here
  try {
    auto t0 = std::chrono::steady_clock::now();
    core::SandboxPaths paths = core::sandbox_paths(opts.root, opts.id);
    core::VmConfig cfg = core::load_vm_config(paths.config);
    Fd sigfd = block_and_watch_signals();
    Vcpu::install_kick_handler();

    Fd console(::open(paths.console_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
    if (!console) throw_errno("open " + paths.console_log);

    MachineSpec spec;
    spec.id = cfg.id;
    spec.vcpus = cfg.vcpus;
    spec.memory_bytes = uint64_t(cfg.memory_mib) << 20;
    spec.kernel = cfg.kernel;
    spec.rootfs = cfg.rootfs;
    spec.cmdline_extra = cfg.cmdline_extra;
    spec.vsock_uds = paths.vsock_sock;
    spec.console_fd = console.get();
    spec.host = detect_host();

    EventLoop loop;
    Machine machine(spec, loop, [&loop] { loop.stop(); });
    machine.boot();
    log::info("kernel command line: " + machine.cmdline());

    bool stop_requested = false;
    ControlServer control(loop, paths.control_sock, [&](const json::Value& req) {
      std::string op = json::string_field(req, "op");
      json::Value r = json::Value::object();
      if (op == "ping") {
        r.set("ok", true);
        r.set("status", "running");
        r.set("pid", static_cast<int64_t>(::getpid()));
      } else if (op == "stop") {
        stop_requested = true;
        loop.stop();
        r.set("ok", true);
      } else {
        fail("unknown control operation '" + op + "'");
      }
      return r;
    });
    loop.add(sigfd.get(), EPOLLIN, [&](uint32_t) {
      signalfd_siginfo si;
      while (::read(sigfd.get(), &si, sizeof si) == sizeof si) {
        log::info("signal " + std::to_string(si.ssi_signo) + ": stopping");
        stop_requested = true;
        loop.stop();
      }
    });

    machine.start();
    auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    log::info("VM running " + std::to_string(ms) + " ms after VMM start");
    report(ready, "ok");
    ready.reset();

    loop.run();
    machine.stop();
    ::unlink(paths.vsock_sock.c_str());
    int code = 0;
    if (auto ex = machine.exit_reason()) {
      if (ex->kind == VmExit::Kind::Error) {
        log::error("guest failed: " + ex->detail);
        log::error("console tail:\n" + fs::tail_lines(paths.console_log, 20));
        code = 1;
      } else {
        log::info("guest stopped: " + ex->detail);
      }
      if (!stop_requested) mark_stopped(paths);
    } else {
      log::info("VMM stopped on request");
    }
    return code;
  } catch (const std::exception& e) {
    log::error(e.what());
    report(ready, std::string("error: ") + e.what());
    return 1;
  }
}

}  // namespace space::vmm
