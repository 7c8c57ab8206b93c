// The per-sandbox VMM process. It reads the VM's config.json and opens everything the VM will use
// (disks, console log, /dev/kvm, its sockets, the kernel for a cold boot, the snapshot's files for
// a restore: the snapshot decides vCPUs, RAM and command line, config.json this sandbox's disks
// and sockets). Jailed (--jail-uid), it then enters its jail (monitor/vmm_jail.h): it forks the
// VMM proper and stays behind as the jail's PID 1, and the VMM runs as the sandbox's uid under
// the seccomp filter of its role before it even decodes the snapshot, which a jailed VMM of an
// earlier run wrote. Then it builds and starts the Machine, serves the control socket on its event
// loop (control_ops.h), and tells `create` through the ready pipe ("ok" or "error: <why>"); startup
// phases are logged at info level. It runs until the guest stops (reset, fault, error), a control
// "stop" arrives, or it gets SIGTERM/SIGINT. On the way out it stops the vCPUs; the CLI notices
// the process is gone and does the bookkeeping (store/state.h's observed status), since a jailed
// VMM can write no file of its sandbox's but the snapshots it is handed a directory for.
#include "monitor/vmm_main.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "egress/paths.h"
#include "jail/privileges.h"
#include "monitor/control_ops.h"
#include "monitor/control_server.h"
#include "monitor/guest_sync.h"
#include "monitor/routes.h"
#include "monitor/vmm_jail.h"
#include "proto/agent.h"
#include "store/paths.h"
#include "store/vm_config.h"
#include "util/daemon.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/phase_log.h"
#include "util/ready.h"
#include "util/socket.h"
#include "util/timing.h"
#include "vmm/kvm.h"
#include "vmm/machine.h"
#include "vmm/snapshot.h"
#include "vmm/snapshot_memory.h"

namespace space::monitor {
namespace {

// Blocks the signals the event loop takes through a signalfd (before any thread starts, so
// every thread inherits the mask).
// SIGCHLD: a branch VMM forked from this one exited, to be reaped.
Fd block_and_watch_signals() {
  return daemon::watch_signals({SIGTERM, SIGINT, SIGHUP, SIGCHLD});
}

// vmm.log keeps at most this much, restarting with a marker line (util/capped_writer.h).
constexpr uint64_t kVmmLogMaxBytes = 16ull << 20;

// RLIMIT_FSIZE for a jailed VMM (jail::drop): its largest disk (a guest fills its disk's holes,
// but the VMM cannot extend a disk into the shared store with fallocate or ftruncate), its memory
// (as configured, and the memory file it restores from: a checkpoint writes one that size), its
// logs, and headroom for a snapshot's headers.
uint64_t file_bound(const VmRun& run) {
  uint64_t bound = std::max<uint64_t>(uint64_t{run.cfg.memory_mib} << 20, kVmmLogMaxBytes);
  for (const Fd* f : {&run.files.rootfs, &run.files.image, &run.files.memory}) {
    struct stat st {};
    if (f->valid() && ::fstat(f->get(), &st) == 0)
      bound = std::max<uint64_t>(bound, static_cast<uint64_t>(st.st_size));
  }
  return bound + (64ull << 20);
}

Fd open_checked(const std::string& path, int flags, const char* what) {
  Fd fd(::open(path.c_str(), flags | O_CLOEXEC, 0640));
  if (!fd) throw_errno(std::string("open ") + what + " " + path);
  return fd;
}

// The directory whose memory file to map: `shared` (a template, whose page cache every sandbox
// restored from it shares) when its vmstate is byte-identical to `dir`'s, i.e. the same snapshot
// (vmstate holds the vCPU clocks and registers of that one moment); otherwise `dir`'s own copy.
// A sandbox's reflinked copy of the memory file has page cache of its own.
std::string memory_dir(const std::string& dir, const std::vector<uint8_t>& vmstate,
                       const std::string& shared) {
  if (shared.empty()) return dir;
  try {
    const std::string f = std::string("/") + vmm::snapshot::kVmstateFile;
    if (vmm::snapshot::read_vmstate_bytes(shared + f) == vmstate) return shared;
    log::info("the template at " + shared +
              " changed since the snapshot; mapping this sandbox's copy");
  } catch (const Error& e) {
    log::info(std::string("cannot share the template's memory: ") + e.what());
  }
  return dir;
}

// Reaps the branch VMMs this process forked (they run as its children) once they exit.
void reap_branches(std::vector<pid_t>& children) {
  std::erase_if(children, [](pid_t pid) {
    int status;
    return ::waitpid(pid, &status, WNOHANG) != 0;  // reaped, or not ours any more
  });
}

// What a snapshot restore brings before the jail: the undecoded vmstate and the memory file.
struct Restore {
  std::vector<uint8_t> vmstate;
  std::string memory_path;
};

// Opens, as root and before any jail, everything the VMM of `cfg` uses. Its sockets belong to
// `owner` (the jail's uid; -1 when not jailed): the VMM dials vsock.sock itself (guest sync).
VmmFiles open_files(const store::SandboxPaths& p, const store::VmConfig& cfg, bool cold,
                    uid_t owner, Restore* restore, const VmmOptions& opts) {
  VmmFiles f;
  f.kvm = vmm::open_kvm_device();
  // Never through a symlink: these sit in the sandbox's directory.
  f.rootfs = open_checked(cfg.rootfs, O_RDWR | O_NOFOLLOW, "root disk");
  if (!cfg.image_disk.empty())
    f.image = open_checked(cfg.image_disk, O_RDWR | O_NOFOLLOW, "image disk");
  if (cold) f.kernel = open_checked(cfg.kernel, O_RDONLY, "kernel");
  f.console =
      open_checked(p.console_log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, "console log");
  net::SocketAccess access{0600, owner, static_cast<gid_t>(owner)};
  f.control =
      net::unix_bind(p.control_sock, {0600, static_cast<uid_t>(-1), static_cast<gid_t>(-1)});
  f.vsock = net::unix_bind(p.vsock_sock, access);
  f.run_dir = open_checked(p.run_dir, O_PATH | O_DIRECTORY, "run directory");
  f.null = open_checked("/dev/null", O_RDWR, "null device");
  if (restore) {
    restore->vmstate =
        vmm::snapshot::read_vmstate_bytes(opts.restore_dir + "/" + vmm::snapshot::kVmstateFile);
    restore->memory_path = memory_dir(opts.restore_dir, restore->vmstate, opts.shared_memory_dir) +
                           "/" + vmm::snapshot::kMemoryFile;
    f.memory = open_checked(restore->memory_path, O_RDONLY | O_NOFOLLOW, "memory file");
  }
  return f;
}

// How long past its expiry a VMM lets its sandbox run before acting itself: the reaper's time.
constexpr int64_t kExpiryGraceS = 30;

// The expiry backstop's timer on `loop`; an invalid Fd when the sandbox never expires.
Fd arm_expiry(const VmRun& run, EventLoop& loop, vmm::Machine& machine, bool& stop_requested) {
  if (!run.expires_at) return Fd();
  Fd t(::timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!t) throw_errno("timerfd_create");
  itimerspec when{};
  when.it_value.tv_sec = run.expires_at + kExpiryGraceS;
  if (::timerfd_settime(t.get(), TFD_TIMER_ABSTIME, &when, nullptr) != 0)
    throw_errno("timerfd_settime");
  const bool pause = run.on_expiry == "checkpoint";
  int fd = t.get();
  loop.add(fd, EPOLLIN, [fd, pause, &loop, &machine, &stop_requested](uint32_t) {
    uint64_t n;
    if (::read(fd, &n, sizeof n) != sizeof n) return;
    if (pause) {
      log::warn("the sandbox expired and nothing checkpointed it: pausing the guest");
      machine.pause();
    } else {
      log::warn("the sandbox expired and nothing destroyed it: stopping the guest");
      stop_requested = true;
      loop.stop();
    }
  });
  return t;
}

// --probe: a VMM's start without a VM. Jailed (--jail-uid), the jail's whole entry as a jailed
// VMM makes it (the same process, flags and function), then "ok" from inside the jail; unjailed,
// "ok" at once. Then exit 0; no VM, no sandbox files. It logs when its code began
// (CLOCK_MONOTONIC), so that the launcher's side can tell the process's start from the jail's
// entry.
int probe_start(const VmmOptions& opts, Fd ready) {
  log::info("probe: started at monotonic " + std::to_string(timing::mono_ns()) + " ns");
  PhaseLog phases;  // after that line, so that its write is in no phase
  try {
    if (opts.run_dir.empty()) fail("--probe needs --dir and --run-dir");
    if (opts.jail_uid == 0) {
      ready::report_line(ready, "ok");
      return 0;
    }
    JailPlan plan{{opts.jail_uid, static_cast<gid_t>(opts.jail_uid)},
                  opts.run_dir,
                  opts.id,
                  jail::unlisted_from_env(),
                  network_from_fd(opts.jail_netns_fd),
                  mount_base_from_fd(opts.jail_mntns_fd)};
    Fd placed = passed_fd(opts.jail_placed_fd, "--jail-placed-fd");
    enter_vmm_jail(plan, phases);
    wait_placed(std::move(placed));
    phases.mark("cgroups");
    log::info("probe: jail entered: " + phases.summary());
    ready::report_line(ready, "ok");
    return 0;
  } catch (const std::exception& e) {
    return ready::report_failure(ready, e);
  }
}

// EOF: every sibling is ready. A byte: the source's branch operation failed, so this branch
// must not start (its source could not kill it, see branch_fork.cpp).
void wait_for_eof(const Fd& pipe) {
  char c;
  for (;;) {
    ssize_t n = ::read(pipe.get(), &c, 1);
    if (n == 0) return;
    if (n > 0) fail("the branch operation failed in a sibling; this branch does not start");
    if (errno != EINTR) throw_errno("wait for the branch's siblings");
  }
}

// The machine `run` describes. Its size has one source: the snapshot when it restores one (the
// memory it maps was checked against it), else config.json.
vmm::MachineSpec machine_spec(const VmRun& run, PhaseLog& phases) {
  const store::VmConfig& cfg = run.cfg;
  vmm::MachineSpec spec;
  spec.id = cfg.id;
  spec.vcpus = run.snap ? run.snap->machine.vcpus : cfg.vcpus;
  spec.memory_bytes = run.snap ? run.snap->machine.memory_bytes : uint64_t(cfg.memory_mib) << 20;
  spec.kernel = cfg.kernel;
  spec.rootfs = cfg.rootfs;
  spec.image_disk = cfg.image_disk;
  spec.cmdline_extra = cfg.cmdline_extra;
  spec.vsock_uds = kVsockSocket;
  // A sandbox, not a template build: the credential and network ports go to the helpers.
  if (!cfg.cred_dir.empty()) spec.vsock_routes = sandbox_routes();
  spec.console_fd = run.files.console.get();
  spec.host = run.host;
  spec.phases = &phases;
  if (run.vcpu_filter) {
    const jail::Program* prog = &*run.vcpu_filter;
    spec.vcpu_thread_setup = [prog] {
      if (int err = jail::load(*prog)) throw_errno("install the vCPU seccomp filter", err);
    };
  }
  return spec;
}

// SIGCHLD reaps branch children; any other signal of the watched set stops the VMM.
void watch_signals(EventLoop& loop, const Fd& sigfd, std::vector<pid_t>& branches,
                   bool& stop_requested) {
  loop.add(sigfd.get(), EPOLLIN, [&loop, &sigfd, &branches, &stop_requested](uint32_t) {
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
}

// The VMM's exit code once its loop ended: 1 when the guest failed (logged, with the console's
// tail), else 0.
int exit_code_of(const vmm::Machine& machine, const store::SandboxPaths& paths) {
  auto ex = machine.exit_reason();
  if (!ex) {
    log::info("VMM stopped on request");
    return 0;
  }
  if (ex->kind != vmm::VmExit::Kind::Error) {
    log::info("guest stopped: " + ex->detail);
    return 0;
  }
  log::error("guest failed: " + ex->detail);
  log::error("console tail:\n" + fs::tail_lines(paths.console_log, 20));
  return 1;
}

}  // namespace

int run_vm(VmRun& run, Fd ready, PhaseLog& phases) {
  const store::VmConfig& cfg = run.cfg;
  // vmm.log (our stderr) holds warnings a guest can provoke: keep it bounded, like console.log.
  log::limit_size(kVmmLogMaxBytes);
  try {
    // Routes and the guest sync dial sockets of the run directory by name. A jailed VMM's root
    // is its run directory, and it is there already (its descriptor of the host's directory was
    // closed: ".." from it would climb to the host's root).
    if (run.files.run_dir && ::fchdir(run.files.run_dir.get()) != 0)
      throw_errno("chdir to the run directory");
    Fd sigfd = block_and_watch_signals();
    vmm::Vcpu::install_kick_handler();
    vmm::MachineSpec spec = machine_spec(run, phases);
    phases.mark("setup");

    EventLoop loop;
    memory::GuestMemory mem =
        run.memory ? std::move(*run.memory) : memory::GuestMemory::anonymous(spec.memory_bytes);
    run.memory.reset();
    vmm::MachineFiles mf{std::move(run.files.kvm), std::move(run.files.rootfs),
                         std::move(run.files.image), std::move(run.files.kernel),
                         std::move(run.files.vsock)};
    vmm::Machine machine(spec, std::move(mf), std::move(mem), loop, [&loop] { loop.stop(); });
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
    GuestSync sync(loop, kVsockSocket, cfg.id, run.hello_flags);
    ControlContext ctl{machine, loop, stop_requested, run, branches, sync};
    ControlServer control(loop, std::move(run.files.control),
                          [&](const std::string& line, std::vector<Fd>& fds) {
                            return handle_control_line(ctl, line, fds);
                          });
    phases.mark("control socket");
    watch_signals(loop, sigfd, branches, stop_requested);

    Fd expiry = arm_expiry(run, loop, machine, stop_requested);
    if (run.start_gate) {
      // A branch: runnable now. Its guest starts once every sibling is, so that running guests
      // do not slow the siblings' set-up down.
      if (run.on_running) run.on_running();
      ready::report_line(ready, "ok");
      ready.reset();
      wait_for_eof(run.start_gate);
      run.start_gate.reset();
      phases.mark("siblings");
    }
    machine.start();
    ctl.running_since_ms = static_cast<int64_t>(timing::wall_ms());
    phases.mark("start vcpus");
    if (run.snap) sync.kick();  // fresh entropy, clock and hostname for the restored guest
    if (ready && run.on_running) run.on_running();
    ready::report_line(ready, "ok");
    ready.reset();
    log::info(std::string(run.snap ? "restored" : "booted") + " VM running" +
              (run.jailed ? " (jailed)" : "") + ": " + phases.summary());

    loop.run();
    machine.stop();
    return exit_code_of(machine, run.paths);
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
  if (opts.probe) return probe_start(opts, std::move(ready));
  PhaseLog phases;
  vmm::snapshot::Snapshot snap;
  std::optional<VmRun> run;
  try {
    store::SandboxPaths paths = opts.dir.empty() ? store::sandbox_paths(opts.root, opts.id)
                                                 : store::paths_in(opts.dir, opts.run_dir);
    run.emplace(VmRun{opts.root, paths, store::load_vm_config(paths.config)});
    run->expires_at = opts.expires_at;
    run->on_expiry = opts.on_expiry;
    phases.mark("config");
    const bool restoring = !opts.restore_dir.empty();
    const bool jailed = opts.jail_uid != 0;
    const jail::Identity who{opts.jail_uid, static_cast<gid_t>(opts.jail_uid)};
    Fd network = network_from_fd(opts.jail_netns_fd);  // owned from here, as the ready pipe
    Fd mount_base = mount_base_from_fd(opts.jail_mntns_fd);
    Fd placed = passed_fd(opts.jail_placed_fd, "--jail-placed-fd");
    Restore restore;
    run->files = open_files(paths, run->cfg, !restoring, jailed ? opts.jail_uid : uid_t(-1),
                            restoring ? &restore : nullptr, opts);
    run->host = vmm::detect_host();
    if (!run->cfg.image_disk.empty()) run->hello_flags |= proto::Hello::kImage;
    if (!run->cfg.cred_dir.empty() &&
        fs::exists(egress::policy_file(egress::egress_paths(opts.root), run->cfg.id)))
      run->hello_flags |= proto::Hello::kNetwork;  // guest-init starts its proxy
    phases.mark("open");

    if (jailed) {
      JailPlan plan{who,
                    paths.run_dir,
                    run->cfg.id,
                    jail::unlisted_from_env(),
                    std::move(network),
                    std::move(mount_base)};
      plan.max_file_bytes = file_bound(*run);
      run->vcpu_filter = enter_vmm_jail(plan, phases);
      run->jailed = true;
      run->files.run_dir.reset();      // the root and working directory now: no host directory held
      wait_placed(std::move(placed));  // before any guest memory is mapped
      phases.mark("cgroups");
    }

    if (restoring) {
      snap = vmm::snapshot::decode(restore.vmstate, opts.restore_dir + "/vmstate");
      phases.mark("decode vmstate");
      const store::VmConfig& cfg = run->cfg;
      const uint64_t cfg_bytes = uint64_t(cfg.memory_mib) << 20;
      if (snap.machine.vcpus != cfg.vcpus || snap.machine.memory_bytes != cfg_bytes)
        log::warn("config.json asks for " + std::to_string(cfg.vcpus) + " vCPUs and " +
                  std::to_string(cfg.memory_mib) + " MiB; the snapshot has " +
                  std::to_string(snap.machine.vcpus) + " and " +
                  std::to_string(snap.machine.memory_bytes >> 20) + " MiB, which win");
      vmm::snapshot::check_memory_file(run->files.memory.get(), restore.memory_path,
                                       snap.machine.memory_bytes);
      run->memory_base =
          vmm::snapshot::memory_base_of(run->files.memory.get(), restore.memory_path);
      run->memory =
          memory::GuestMemory::from_file(run->files.memory.get(), snap.machine.memory_bytes);
      phases.mark("map memory");
      run->snap = &snap;
      run->restore_from = opts.restore_dir;
    }
  } catch (const std::exception& e) {
    return ready::report_failure(ready, e);
  }
  return run_vm(*run, std::move(ready), phases);
}

}  // namespace space::monitor
