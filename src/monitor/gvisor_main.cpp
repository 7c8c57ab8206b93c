// The gVisor monitor; see gvisor_main.h.
#include "monitor/gvisor_main.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "agent/client.h"
#include "gvisor/runsc.h"
#include "gvisor/spec.h"
#include "jail/cgroup.h"
#include "monitor/agent_pool.h"
#include "monitor/control_server.h"
#include "monitor/gvisor_host.h"
#include "monitor/routes.h"
#include "proto/agent.h"
#include "proto/control.h"
#include "proto/rpc.h"
#include "store/paths.h"
#include "store/vm_config.h"
#include "util/error.h"
#include "util/event_loop.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/phase_log.h"
#include "util/process.h"
#include "util/procfs.h"
#include "util/ready.h"
#include "util/socket.h"

namespace space::monitor {
namespace {

namespace control = proto::control;

constexpr int kClientWaitMs = 10'000;   // a host client's wait for a guest connection
constexpr int64_t kExpiryGraceS = 30;   // as the VMM: the reaper's time to act first
constexpr int kGuestDialTimeoutS = 60;  // from runsc start to guest-init's first dial
constexpr int kCheckpointTries = 3;     // runsc checkpoint attempts (a dial in flight fails one)
constexpr int kQuiesceWaitMs = 2000;    // for guest-init to close its idle connections

int64_t since_us(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               t0)
      .count();
}

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Monitor {
  const GvisorOptions& o;
  std::string id;  // the sandbox's: o.id, or the one a pool member adopted (runsc keeps o.id)
  bool adopted = false;
  int64_t expires_at = 0;
  std::string on_expiry;
  Fd expiry_timer;
  store::SandboxPaths p;
  store::VmConfig cfg;
  gvisor::RunscConfig runsc;
  std::string gdir;  // <run>/gvisor
  Fd host_mounts;    // the host's mount namespace, while we are in our own
  PhaseLog phases;   // where a start's time went (logged at debug level)
  EventLoop loop;
  AgentPool pool;
  std::vector<Fd> guest_listeners;
  std::atomic<int> forwards{0};  // guest connections relayed to the helpers now
  bool paused = false;
  bool frozen = false;  // paused through the cgroup freezer (jail::freeze_group), not runsc
  bool stop_requested = false;
  bool sandbox_gone = false;
  int64_t running_since_ms = 0;

  explicit Monitor(const GvisorOptions& opts)
      : o(opts), id(opts.id), expires_at(opts.expires_at), on_expiry(opts.on_expiry) {}

  // The paths of sandbox `id`, or of the pool member we are; runsc's state with them.
  void set_paths(const store::SandboxPaths& paths) {
    p = paths;
    gdir = p.run_dir + "/gvisor";
    runsc.root = gdir + "/runsc";
  }

  void prepare() {
    set_paths(o.pool_template.empty() ? store::sandbox_paths(o.root, o.id)
                                      : store::pool_member_paths(o.root, o.pool_template, o.id));
    cfg = store::load_vm_config(p.config);
    if (cfg.engine != "gvisor") fail("config.json: engine \"" + cfg.engine + "\", not gvisor");
    runsc.binary = o.runsc;
    runsc.platform = o.platform;
    runsc.overlay = cfg.overlay_dir.empty() ? "all:memory" : "all:dir=" + cfg.overlay_dir;
    if (!cfg.overlay_dir.empty()) make_dir(cfg.overlay_dir, 0700);
    make_dir(gdir, 0700);
    make_dir(gdir + "/host", 0700);
    make_dir(gdir + "/bundle", 0700);
    make_dir(runsc.root, 0700);
    host_mounts = enter_own_mount_namespace();
    mount_read_only(cfg.rootfs, gdir + "/base");
    if (!cfg.image_disk.empty()) mount_read_only(cfg.image_disk, gdir + "/image");
  }

  void write_bundle() {
    gvisor::SandboxSpec s;
    s.id = o.id;
    s.root = gdir + "/base";
    for (const char* dir : {proto::kGvisorHostDir, proto::kGvisorImageDir})
      if (!fs::is_dir(s.root + dir))
        fail(cfg.rootfs + " has no " + dir + " (made before the gvisor engine)",
             "rebuild the rootfs: scripts/build-rootfs.sh, or install.sh");
    if (!cfg.image_disk.empty()) s.image = gdir + "/image";
    s.host_dir = gdir + "/host";
    s.memory_bytes = uint64_t{cfg.memory_mib} << 20;
    s.cgroups_path = o.cgroup;
    json::save_file(gdir + "/bundle/config.json", gvisor::sandbox_spec(s), 0600,
                    fs::Sync::Volatile);
  }

  // The guest's sockets in the host directory. While closed (a checkpoint), nothing listens
  // there: guest-init's dials fail and it retries, so runsc finds no connected host socket.
  void open_guest_ports() {
    for (uint32_t port : {proto::kAgentPort, proto::kCredentialPort, proto::kEgressPort}) {
      std::string path = proto::gvisor_port_socket(gdir + "/host", port);
      Fd l = net::unix_listen(path, 64);
      int fd = l.get();
      guest_listeners.push_back(std::move(l));
      loop.add(fd, EPOLLIN, [this, fd, port](uint32_t) {
        for (;;) {
          Fd c(::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC));
          if (!c) return;
          if (port == proto::kAgentPort) {
            pool.add_guest(std::move(c));
          } else {  // by the run directory of now: a pool member's moves when it is adopted
            const char* helper = port == proto::kCredentialPort ? kCredSocket : kEgressSocket;
            forward_to_helper(std::move(c), p.run_dir + "/" + helper, forwards);
          }
        }
      });
    }
  }

  // Stops listening: what guest-init dialled meanwhile (in the listeners' backlogs) is taken,
  // as an idle agent connection or closed once the guest has closed it too.
  void close_guest_ports() {
    auto dl = net::Deadline::after_ms(kQuiesceWaitMs);
    for (size_t i = 0; i < guest_listeners.size(); i++) {
      int fd = guest_listeners[i].get();
      loop.remove(fd);
      for (;;) {
        Fd c(::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC));
        if (!c) break;
        if (i == 0)
          pool.add_guest(std::move(c));
        else
          close_confirmed(std::move(c), dl);
      }
    }
    guest_listeners.clear();
    for (uint32_t port : {proto::kAgentPort, proto::kCredentialPort, proto::kEgressPort})
      ::unlink(proto::gvisor_port_socket(gdir + "/host", port).c_str());
  }

  // runsc cannot save a connected host socket, and a checkpoint that meets one ends the sandbox:
  // before a checkpoint, no listener, no idle agent connection (each closed by guest-init too),
  // and nothing relayed. Throws (listeners back) while an exec, cp, forward or network
  // connection is open.
  void quiesce() {
    close_guest_ports();
    pool.close_idle(kQuiesceWaitMs);
    if (pool.active() > 0 || forwards.load() > 0) {
      int busy = pool.active() + forwards.load();
      pool.reopen();
      open_guest_ports();
      fail("the sandbox has " + std::to_string(busy) +
               " open connections (exec, cp, forward or network), and runsc cannot checkpoint "
               "a sandbox with a connection to the host",
           "checkpoint once they end");
    }
  }

  void unquiesce() {
    pool.reopen();
    if (guest_listeners.empty()) open_guest_ports();
  }

  void listen_host() {
    Fd l = net::unix_listen(p.vsock_sock, 64);
    int fd = l.release();
    loop.add(fd, EPOLLIN, [this, fd](uint32_t) {
      for (;;) {
        Fd c(::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC));
        if (!c) return;
        if (!net::peer_root_or_self(c.get())) continue;  // as the VMM's vsock.sock
        std::thread([this, conn = std::move(c)]() mutable {
          pool.serve_host(std::move(conn), kClientWaitMs);
        }).detach();
      }
    });
  }

  void start_sandbox() {
    Fd console(::open(p.console_log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
    if (!console) throw_errno("open " + p.console_log);
    const std::string bundle = gdir + "/bundle";
    // A cold start is one runsc command, `run --detach` (a separate `create` first would cost
    // one more runsc start, ~20 ms here); a checkpoint is restored into a container created for
    // it, as it always was (`restore --detach` alone also works, but is not proven under load).
    if (o.restore_dir.empty()) {
      gvisor::run_runsc(runsc, {"run", "--detach", "--bundle=" + bundle, o.id}, console.get());
    } else {
      gvisor::run_runsc(runsc, {"create", "--bundle=" + bundle, o.id}, console.get());
      gvisor::run_runsc(
          runsc,
          {"restore", "--detach", "--image-path=" + o.restore_dir, "--bundle=" + bundle, o.id},
          console.get());
    }
    phases.mark(o.restore_dir.empty() ? "runsc run" : "runsc restore");
    running_since_ms = unix_ms();
    limit_cpu();
    leave_own_mount_namespace();
  }

  // The sandbox's CPU quota (as a VM's: jail::sandbox_limits), set now that runsc's start, which
  // it would have throttled, is over.
  void limit_cpu() {
    if (o.cgroup.empty()) return;
    const uint32_t percent = jail::sandbox_limits(cfg.vcpus, 0, 0).cpu_percent;
    try {
      jail::set_cpu_quota(jail::detect_layout(), o.cgroup, uint64_t{percent} * 1000, 100000);
    } catch (Error& e) {
      e.add_context("the sandbox's CPU quota");
      throw;
    }
  }

  // runsc's sandbox and gofer each made a mount namespace of their own from ours, with only
  // what they serve: ours, and its copies of the host's mounts, go once we leave it. Single
  // threaded still (a mount namespace cannot be changed with a shared fs_struct).
  void leave_own_mount_namespace() {
    if (!host_mounts) return;
    if (::setns(host_mounts.get(), CLONE_NEWNS) != 0) throw_errno("setns(the host's mounts)");
    host_mounts.reset();
  }

  // Waits for guest-init's first dial; the sandbox ending or the deadline is an error.
  void wait_for_guest(int signal_fd) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(kGuestDialTimeoutS);
    while (pool.idle() == 0) {
      if (std::chrono::steady_clock::now() > until)
        fail("guest-init did not dial in within " + std::to_string(kGuestDialTimeoutS) + " s",
             "see the sandbox's console.log");
      loop.run_once(50);
      on_signals(signal_fd);
      if (sandbox_gone)
        fail("the sandbox ended before guest-init dialled in", "see the sandbox's console.log");
    }
  }

  void on_signals(int signal_fd) {
    signalfd_siginfo si[8];
    ssize_t n;
    while ((n = ::read(signal_fd, si, sizeof si)) > 0) {
      for (size_t i = 0; i < size_t(n) / sizeof si[0]; i++) {
        if (si[i].ssi_signo == SIGCHLD) continue;
        log::info(std::string("got ") + strsignal(int(si[i].ssi_signo)) + "; ending the sandbox");
        stop_requested = true;
        loop.stop();
      }
    }
    // runsc's sandbox and gofer are our children (child subreaper; the runsc commands we run
    // are reaped by proc::run on this thread, never here): once it runs, either one ending ends
    // the sandbox (its PID 1 exited, or the host's OOM killer chose one of them), and the
    // other is killed on the way out rather than left half a sandbox.
    int status;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (!running_since_ms) continue;
      log::info("runsc's process " + std::to_string(pid) + " " + proc::describe_status(status));
      sandbox_gone = true;
    }
    if (sandbox_gone) loop.stop();
  }

  // True once runsc's processes are gone (none of our children is left).
  bool sandbox_ended() const { return children().empty(); }

  // Ends every process of the sandbox at once: our children are runsc's sandbox and gofer.
  void kill_sandbox() {
    for (;;) {
      bool any = false;
      for (pid_t pid : children()) {
        ::kill(pid, SIGKILL);
        any = true;
      }
      if (frozen) {  // a frozen process dies of its SIGKILL only once thawed
        try {
          jail::freeze_group(o.cgroup, false);
        } catch (const Error& e) {
          log::error(std::string("could not thaw the sandbox to end it: ") + e.what());
        }
        frozen = false;
      }
      if (!any) break;
      int status;
      while (::waitpid(-1, &status, 0) > 0) {
      }
      if (errno == ECHILD) break;
    }
  }

  // Our children's pids: runsc's sandbox and gofer.
  std::vector<pid_t> children() const { return proc::children_of(::getpid()); }

  // A restored sandbox (a resume, a branch) still has the hostname of the one checkpointed: one
  // Hello names it, as a VM's monitor says Hello after every restore (monitor/guest_sync.h), and
  // has guest-init prepare its image. A failure is logged; the first exec's Hello does it too.
  void hello_after_restore() {
    try {
      auto dl = net::Deadline::after_ms(kClientWaitMs);
      Fd conn = pool.take_one(kClientWaitMs);
      if (!conn) fail("no agent connection");
      uint32_t flags = cfg.image_disk.empty() ? 0 : proto::Hello::kImage;
      agent::write_frame(conn.get(), proto::Type::Hello, agent::make_hello(id, flags).encode(), dl);
      agent::read_hello_reply(conn.get(), dl);
    } catch (const std::exception& e) {
      log::warn(std::string("no Hello to the restored guest: ") + e.what());
    }
  }

  control::RunState state() const {
    return paused ? control::RunState::Paused : control::RunState::Running;
  }

  std::string handle(std::string_view line, std::vector<Fd>& fds);
  void arm_expiry();
};

struct Handlers {
  Monitor& m;
  std::vector<Fd>& fds;

  control::PingReply operator()(const control::PingRequest&) const {
    return {m.state(), static_cast<int64_t>(::getpid())};
  }
  // Pauses (`pause`) or resumes the sandbox unless it is so already; the time it took, in
  // microseconds. Through the cgroup freezer where the host has one for the sandbox's group
  // (about a millisecond; runsc's sandbox, gofer and stubs stop where they are, as a VM's
  // vCPUs do), else through `runsc pause` (a runsc start, ~40 ms).
  int64_t set_paused(bool pause) const {
    auto t0 = std::chrono::steady_clock::now();
    if (m.paused != pause) {
      if (m.frozen || (pause && !m.o.cgroup.empty() && jail::freeze_group(m.o.cgroup, true))) {
        if (!pause) jail::freeze_group(m.o.cgroup, false);
        m.frozen = pause;
      } else {
        gvisor::run_runsc(m.runsc, {pause ? "pause" : "resume", m.o.id});
      }
    }
    m.paused = pause;
    return since_us(t0);
  }
  control::PauseReply operator()(const control::PauseRequest&) const {
    control::PauseReply r;
    r.pause_us = set_paused(true);
    return r;
  }
  control::ResumeReply operator()(const control::ResumeRequest&) const {
    control::ResumeReply r;
    r.resume_us = set_paused(false);
    return r;
  }
  // A checkpoint: runsc writes the sandbox (its memory, the overlay's writes) into the request's
  // directory, and the sandbox is left paused, as a VM's snapshot leaves it.
  control::SnapshotReply operator()(const control::SnapshotRequest& req) const {
    if (fds.size() != 1) fail("snapshot: expected the directory's descriptor");
    if (req.dir.empty() || req.dir[0] != '/') fail("snapshot: the directory is not absolute");
    auto t0 = std::chrono::steady_clock::now();
    // A paused sandbox cannot close its ends of the agent connections, and runsc cannot save
    // them: it runs for the moment that takes, and is paused again with its checkpoint.
    const bool was_paused = m.paused;
    set_paused(false);
    auto pause_again = [&] {
      if (!was_paused) return;
      try {
        set_paused(true);
      } catch (const Error& e) {
        log::error(std::string("could not pause the sandbox again: ") + e.what());
      }
    };
    try {
      m.quiesce();
    } catch (...) {
      pause_again();
      throw;
    }
    try {
      // A dial guest-init had in flight, or an idle connection it has not closed yet, fails the
      // checkpoint: another try, once it has given up.
      for (int attempt = 1;; attempt++) {
        try {
          // Uncompressed: a search of the image for a secret's bytes (tests/integration/70)
          // means what it says; zero pages are left out.
          gvisor::run_runsc(m.runsc,
                            {"checkpoint", "--leave-running", "--compression=none",
                             "--exclude-committed-zero-pages", "--image-path=" + req.dir, m.o.id});
          break;
        } catch (const Error& e) {
          if (attempt == kCheckpointTries || m.sandbox_ended()) throw;
          log::warn(std::string("checkpoint, try ") + std::to_string(attempt) + ": " + e.what());
          ::unlink((req.dir + "/checkpoint.img").c_str());
          std::this_thread::sleep_for(std::chrono::milliseconds(25 * attempt));
        }
      }
      set_paused(true);
    } catch (...) {
      m.unquiesce();
      pause_again();
      throw;
    }
    m.unquiesce();  // paused: guest-init dials again once resumed
    control::SnapshotReply r;
    r.pause_us = since_us(t0);
    struct stat st {};
    if (::stat((req.dir + "/checkpoint.img").c_str(), &st) == 0)
      r.memory_bytes = r.memory_data_bytes = static_cast<uint64_t>(st.st_size);
    r.ms = {{"total", double(r.pause_us) / 1000.0}};
    return r;
  }
  control::BranchReply operator()(const control::BranchRequest&) const {
    fail("the gvisor engine branches through runsc's checkpoint, not a VM fork");
  }
  control::StatsReply operator()(const control::StatsRequest&) const {
    control::StatsReply r;
    r.status = m.state();
    r.guest_clock_ns = uint64_t(unix_ms() - m.running_since_ms) * 1'000'000;
    r.running_since_ms = m.running_since_ms;
    r.host_connections = static_cast<uint64_t>(m.pool.active());
    r.guest_connections = m.pool.idle();
    r.vcpus = m.cfg.vcpus;
    return r;
  }
  control::StopReply operator()(const control::StopRequest&) const {
    m.stop_requested = true;
    m.loop.stop();
    return {};
  }
  // A pool member becomes sandbox `req.id`: create has moved its files and run directory to that
  // sandbox's paths (its sockets, bound, moved with them; runsc's gofer holds its directories
  // open), so only what we find by path changes. The next Hello gives the guest its name.
  control::AdoptReply operator()(const control::AdoptRequest& req) const {
    if (m.o.pool_template.empty() || m.adopted)
      fail("sandbox " + m.id + " is not a pool member waiting to be adopted");
    store::SandboxPaths to = store::sandbox_paths(m.o.root, req.id);
    if (!fs::is_dir(to.run_dir) || !fs::exists(to.config))
      fail("adopt " + req.id + ": its files are not at " + to.dir + " and " + to.run_dir);
    m.set_paths(to);
    m.id = req.id;
    m.adopted = true;
    m.expires_at = req.expires_at;
    m.on_expiry = req.on_expiry;
    m.arm_expiry();
    log::info("pool member " + m.o.id + " is now sandbox " + m.id);
    return {static_cast<int64_t>(::getpid())};
  }
};

std::string Monitor::handle(std::string_view line, std::vector<Fd>& fds) {
  return proto::rpc::answer([&] {
    control::Request req = control::decode_request(line);
    return std::visit(
        [&](const auto& r) {
          return control::encode_reply(Handlers{*this, fds}(r));
        },
        req);
  });
}

// The expiry backstop, as the VMM's: if the reaper has not acted kExpiryGraceS after the
// sandbox's expiry, pause it (checkpoint) or end it (destroy). Again when a pool member adopts a
// sandbox with an expiry.
void Monitor::arm_expiry() {
  if (expiry_timer) loop.remove(expiry_timer.get());
  expiry_timer.reset();
  if (!expires_at) return;
  Fd t(::timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!t) throw_errno("timerfd_create");
  itimerspec when{};
  when.it_value.tv_sec = expires_at + kExpiryGraceS;
  if (::timerfd_settime(t.get(), TFD_TIMER_ABSTIME, &when, nullptr) != 0)
    throw_errno("timerfd_settime");
  int fd = t.get();
  loop.add(fd, EPOLLIN, [fd, this](uint32_t) {
    uint64_t n;
    if (::read(fd, &n, sizeof n) != sizeof n) return;
    if (on_expiry == "checkpoint") {
      log::warn("the sandbox expired and nothing checkpointed it: pausing it");
      std::vector<Fd> none;
      try {
        Handlers{*this, none}(control::PauseRequest{});
      } catch (const std::exception& e) {
        log::error(std::string("pause on expiry: ") + e.what());
      }
    } else {
      log::warn("the sandbox expired and nothing destroyed it: ending it");
      stop_requested = true;
      loop.stop();
    }
  });
  expiry_timer = std::move(t);
}

}  // namespace

int gvisor_main(const GvisorOptions& opts) {
  Fd ready(opts.ready_fd);
  Monitor m(opts);
  std::optional<ControlServer> control_server;
  Fd sigfd;
  try {
    sigfd = block_monitor_signals();
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) throw_errno("prctl(PR_SET_CHILD_SUBREAPER)");
    if (opts.runsc.empty()) fail("no runsc given", "apt-get install -t bookworm-backports runsc");
    join_cgroup(opts.cgroup);
    m.prepare();
    m.phases.mark("mounts");
    m.write_bundle();
    m.open_guest_ports();
    m.listen_host();
    control_server.emplace(
        m.loop, m.p.control_sock,
        [&m](const std::string& line, std::vector<Fd>& fds) { return m.handle(line, fds); });
    int sfd = sigfd.get();
    m.loop.add(sfd, EPOLLIN, [&m, sfd](uint32_t) { m.on_signals(sfd); });
    m.arm_expiry();
    m.phases.mark("spec and sockets");
    m.start_sandbox();
    m.wait_for_guest(sfd);
    m.phases.mark("guest-init dialled");
  } catch (const std::exception& e) {
    m.kill_sandbox();
    return ready::report_failure(ready, e);
  }
  if (!opts.restore_dir.empty()) m.hello_after_restore();
  ready::report_line(ready, "ok");
  ready.reset();
  log::info("sandbox " + opts.id + " runs on gvisor");
  log::debug("start of " + opts.id + ": " + m.phases.summary());
  if (!m.sandbox_gone && !m.stop_requested) m.loop.run();
  if (m.sandbox_gone) log::info("the sandbox ended by itself");
  m.kill_sandbox();
  return 0;
}

}  // namespace space::monitor
