// The per-sandbox VMM process. It reads the VM's config.json, builds and boots the Machine (or,
// with --restore DIR, maps DIR/memory and restores DIR/vmstate into it: the snapshot decides
// vCPUs, RAM and command line, config.json this sandbox's disk and sockets), serves the control
// socket on its event loop (control_ops.h), and tells `create` through the ready pipe
// ("ok" or "error: <why>"); startup phases are logged at info level. It runs until the guest
// stops (reset, fault, error), a control "stop" arrives, or it gets SIGTERM/SIGINT. On the way
// out it stops the vCPUs, removes its sockets and, if the guest stopped by itself, records
// status "stopped" in state.json when the sandbox lock is free (a destroy in progress holds it
// and does its own bookkeeping).
#include "monitor/vmm_main.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <vector>

#include "egress/paths.h"
#include "monitor/control_ops.h"
#include "monitor/control_server.h"
#include "monitor/cred_route.h"
#include "monitor/egress_route.h"
#include "monitor/guest_sync.h"
#include "proto/agent.h"
#include "store/paths.h"
#include "store/state.h"
#include "store/vm_config.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/phase_log.h"
#include "util/ready.h"
#include "vmm/host.h"
#include "vmm/machine.h"
#include "vmm/snapshot.h"
#include "vmm/snapshot_memory.h"

namespace space::monitor {
namespace {

// Blocks the signals the event loop takes through a signalfd (before any thread starts, so
// every thread inherits the mask).
Fd block_and_watch_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGCHLD);  // a branch VMM forked from this one exited: reap it
  if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) throw_errno("pthread_sigmask");
  Fd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd) throw_errno("signalfd");
  ::signal(SIGPIPE, SIG_IGN);
  return fd;
}

// vmm.log keeps at most this much, restarting with a marker line (util/capped_writer.h).
constexpr uint64_t kVmmLogMaxBytes = 16ull << 20;

void mark_stopped(const store::SandboxPaths& paths) {
  try {
    store::SandboxLock lock(paths.lock, /*nonblocking=*/true);
    if (!lock.held()) return;
    store::SandboxState st = store::read_state(paths.state);
    if (st.pid != ::getpid()) return;  // not ours any more
    st.status = store::Status::Stopped;
    st.pid = 0;
    st.pid_start_time = 0;
    store::write_state(paths.state, st);
  } catch (const Error& e) {
    log::warn(std::string("could not record the stopped state: ") + e.what());
  }
}

// The directory whose memory file to map: `shared` (a template, whose page cache every sandbox
// restored from it shares) when its vmstate is byte-identical to `dir`'s, i.e. the same snapshot
// (vmstate holds the vCPU clocks and registers of that one moment); otherwise `dir`'s own copy.
// A sandbox's reflinked copy of the memory file has page cache of its own.
std::string memory_dir(const std::string& dir, const std::string& shared) {
  if (shared.empty()) return dir;
  try {
    const std::string f = std::string("/") + vmm::snapshot::kVmstateFile;
    if (fs::read_file(dir + f, 16u << 20) == fs::read_file(shared + f, 16u << 20)) return shared;
    log::info("the template at " + shared +
              " changed since the snapshot; mapping this sandbox's copy");
  } catch (const Error& e) {
    log::info(std::string("cannot share the template's memory: ") + e.what());
  }
  return dir;
}

// Reads DIR/vmstate and maps the snapshot's memory (see memory_dir), whose file it records in
// `base`.
memory::GuestMemory load_snapshot(const std::string& dir, const std::string& shared,
                                  const store::VmConfig& cfg, vmm::snapshot::Snapshot& snap,
                                  vmm::snapshot::MemoryBase& base, PhaseLog& phases) {
  snap = vmm::snapshot::read_vmstate(dir + "/" + vmm::snapshot::kVmstateFile);
  phases.mark("read vmstate");
  const uint64_t cfg_bytes = uint64_t(cfg.memory_mib) << 20;
  if (snap.machine.vcpus != cfg.vcpus || snap.machine.memory_bytes != cfg_bytes)
    log::warn("config.json asks for " + std::to_string(cfg.vcpus) + " vCPUs and " +
              std::to_string(cfg.memory_mib) + " MiB; the snapshot has " +
              std::to_string(snap.machine.vcpus) + " and " +
              std::to_string(snap.machine.memory_bytes >> 20) + " MiB, which win");
  const std::string memory_file = memory_dir(dir, shared) + "/" + vmm::snapshot::kMemoryFile;
  Fd mem = vmm::snapshot::open_memory_file(memory_file, snap.machine.memory_bytes);
  base = vmm::snapshot::memory_base_of(mem.get(), memory_file);
  memory::GuestMemory m = memory::GuestMemory::from_file(mem.get(), snap.machine.memory_bytes);
  phases.mark("map memory");
  return m;
}

// Reaps the branch VMMs this process forked (they run as its children) once they exit.
void reap_branches(std::vector<pid_t>& children) {
  std::erase_if(children, [](pid_t pid) {
    int status;
    return ::waitpid(pid, &status, WNOHANG) != 0;  // reaped, or not ours any more
  });
}

}  // namespace

int run_vm(VmRun& run, Fd ready, PhaseLog& phases) {
  const store::SandboxPaths& paths = run.paths;
  const store::VmConfig& cfg = run.cfg;
  // vmm.log (our stderr) holds warnings a guest can provoke: keep it bounded, like console.log.
  log::limit_size(kVmmLogMaxBytes);
  try {
    Fd sigfd = block_and_watch_signals();
    vmm::Vcpu::install_kick_handler();

    Fd console(::open(paths.console_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
    if (!console) throw_errno("open " + paths.console_log);

    vmm::MachineSpec spec;
    spec.id = cfg.id;
    spec.vcpus = run.snap ? run.snap->machine.vcpus : cfg.vcpus;
    spec.memory_bytes = uint64_t(cfg.memory_mib) << 20;
    spec.kernel = cfg.kernel;
    spec.rootfs = cfg.rootfs;
    spec.image_disk = cfg.image_disk;
    spec.cmdline_extra = cfg.cmdline_extra;
    spec.vsock_uds = paths.vsock_sock;
    spec.vsock_routes = cred_routes(run.root, cfg.cred_dir, cfg.id);  // port 1025 -> helper
    if (!cfg.cred_dir.empty())  // a sandbox, not a template build: port 1026 -> broker
      spec.vsock_routes.merge(egress_routes(run.root, cfg.id));
    spec.console_fd = console.get();
    spec.host = vmm::detect_host();
    spec.phases = &phases;
    phases.mark("setup");

    EventLoop loop;
    memory::GuestMemory mem =
        run.memory ? std::move(*run.memory) : memory::GuestMemory::anonymous(spec.memory_bytes);
    run.memory.reset();
    vmm::Machine machine(spec, std::move(mem), loop, [&loop] { loop.stop(); });
    if (run.snap) {
      try {
        machine.restore(*run.snap);
      } catch (Error& e) {
        e.add_context("restore from " + run.restore_from);
        throw;
      }
    } else {
      machine.boot();
      phases.mark("boot setup");
    }
    log::info("kernel command line: " + machine.cmdline());

    bool stop_requested = false;
    std::vector<pid_t> branches;
    uint32_t hello_flags = cfg.image_disk.empty() ? 0 : proto::Hello::kImage;
    if (!cfg.cred_dir.empty() &&
        fs::exists(egress::policy_file(egress::egress_paths(run.root), cfg.id)))
      hello_flags |= proto::Hello::kNetwork;  // guest-init starts its proxy
    GuestSync sync(loop, paths.vsock_sock, cfg.id, hello_flags);
    ControlContext ctl{machine, loop, stop_requested, run.root, run.memory_base, branches, sync};
    ControlServer control(loop, paths.control_sock,
                          [&](const std::string& line) { return handle_control_line(ctl, line); });
    phases.mark("control socket");
    loop.add(sigfd.get(), EPOLLIN, [&](uint32_t) {
      signalfd_siginfo si;
      while (::read(sigfd.get(), &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGCHLD) {
          reap_branches(branches);
          continue;
        }
        log::info("signal " + std::to_string(si.ssi_signo) + ": stopping");
        stop_requested = true;
        loop.stop();
      }
    });

    machine.start();
    phases.mark("start vcpus");
    if (run.snap) sync.kick();  // fresh entropy, clock and hostname for the restored guest
    if (run.on_running) run.on_running();
    ready::report_line(ready, "ok");
    ready.reset();
    log::info(std::string(run.snap ? "restored" : "booted") + " VM running: " + phases.summary());

    loop.run();
    machine.stop();
    ::unlink(paths.vsock_sock.c_str());
    int code = 0;
    if (auto ex = machine.exit_reason()) {
      if (ex->kind == vmm::VmExit::Kind::Error) {
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
    return ready::report_failure(ready, e);
  }
}

int vmm_main(const VmmOptions& opts) {
  // The pipe `create` waits on; owned from here. A number that is not an open fd is ignored, or
  // the first fd we open would take its place and "ok" would be written to (and close) it.
  Fd ready(opts.ready_fd >= 0 && ::fcntl(opts.ready_fd, F_GETFD) >= 0 ? opts.ready_fd : -1);
  if (opts.ready_fd >= 0 && !ready)
    log::warn("--ready-fd " + std::to_string(opts.ready_fd) + " is not open");
  PhaseLog phases;
  vmm::snapshot::Snapshot snap;
  std::optional<VmRun> run;
  try {
    store::SandboxPaths paths = opts.dir.empty() ? store::sandbox_paths(opts.root, opts.id)
                                                 : store::paths_in(opts.dir, opts.run_dir);
    run.emplace(VmRun{opts.root, paths, store::load_vm_config(paths.config)});
    phases.mark("config");
    if (!opts.restore_dir.empty()) {
      run->memory = load_snapshot(opts.restore_dir, opts.shared_memory_dir, run->cfg, snap,
                                  run->memory_base, phases);
      run->snap = &snap;
      run->restore_from = opts.restore_dir;
    }
  } catch (const std::exception& e) {
    return ready::report_failure(ready, e);
  }
  return run_vm(*run, std::move(ready), phases);
}

}  // namespace space::monitor
