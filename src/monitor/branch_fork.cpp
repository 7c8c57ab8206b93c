// fork_branches(); see branch_fork.h. Between fork() and the child's run_vm() only this thread
// exists in the child: the parent's vCPU threads are parked outside any lock (pause), and the
// parent's objects are never destroyed there (the child leaves with _exit), so it neither
// double-closes their fds nor joins threads it does not have.
#include "monitor/branch_fork.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "jail/seccomp.h"
#include "monitor/vmm_main.h"
#include "proto/agent.h"
#include "store/paths.h"
#include "store/vm_config.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/log.h"

namespace space::monitor {
namespace {

constexpr int kReportFd = 3;
constexpr int kGoFd = 4;  // read end of the "go" pipe: EOF once the parent has forked them all
// The read end of the "gate" pipe (lifted, kept at any number): EOF once the parent has every
// sibling's "ok", when the branch's vCPUs start (VmRun::start_gate).

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void say(int fd, const std::string& line) {
  std::string l = line + "\n";
  ssize_t n = ::write(fd, l.data(), l.size());
  (void)n;
}

// The descriptors of one target, in the order proto/control.h gives.
struct TargetFds {
  int vmm_log, console, rootfs, image, control, vsock, run_dir;
  std::vector<int> cgroups;  // cgroup.procs files of the branch's cgroup
};

TargetFds target_fds(const BranchTarget& t, const std::vector<Fd>& fds, size_t first) {
  size_t i = first;
  auto next = [&] { return fds[i++].get(); };
  TargetFds f{};
  f.vmm_log = next();
  f.console = next();
  f.rootfs = next();
  f.image = t.image ? next() : -1;
  f.control = next();
  f.vsock = next();
  f.run_dir = next();
  for (uint32_t k = 0; k < t.cgroup_fds; k++) f.cgroups.push_back(next());
  return f;
}

// A descriptor the child keeps, moved above the numbers detach() assigns (0 to kGoFd) when it
// sits on one of them: a VMM started with few descriptors open has /dev/kvm or a received one
// there, and dup2 would close it. The low copy is closed by detach().
int lift(int fd) {
  if (fd < 0 || fd > kGoFd) return fd;
  int moved = ::fcntl(fd, F_DUPFD, 10);
  if (moved < 0) _exit(1);
  return moved;
}

// Sets up the child's process state: report pipe at fd 3, the go pipe at fd 4, stdio to the
// branch's log, nothing else open but what it keeps, a session of its own. Every kept
// descriptor must be lifted first.
void detach(int report_fd, int go_fd, const TargetFds& f, int null_fd,
            std::initializer_list<int> keep_too) {
  int r = lift(report_fd), g = lift(go_fd);
  if (::dup2(r, kReportFd) < 0 || ::dup2(g, kGoFd) < 0) _exit(1);
  if (::dup2(null_fd, 0) < 0 || ::dup2(f.vmm_log, 1) < 0 || ::dup2(f.vmm_log, 2) < 0) _exit(1);
  int keep[16] = {0,        1,       2,         kReportFd, kGoFd,     f.console,
                  f.rootfs, f.image, f.control, f.vsock,   f.run_dir, null_fd};
  size_t n = 12;
  for (int k : keep_too) keep[n++] = k;
  if (!close_all_but(keep, n)) throw_errno("close_range");
  if (::setsid() < 0) throw_errno("setsid");
}

[[noreturn]] void become_branch(const VmRun& source, const BranchTarget& t, TargetFds f,
                                const memory::GuestMemory& inherited,
                                const vmm::snapshot::Snapshot& snap, const std::string& source_id,
                                int kvm_fd, int report_fd, int go_fd, int gate_fd, pid_t parent) {
  int code = 1;
  try {
    // Until it runs, a branch dies with the source VMM (a failed branch op is cleaned up by the
    // CLI, which would not know this process). run_vm's "ok" clears it: from then on a branch
    // outlives its source.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) _exit(1);
    // Out of the source's cgroup into the branch's own, before it allocates anything.
    for (int fd : f.cgroups)
      if (::write(fd, "0", 1) != 1) _exit(1);
    PhaseLog phases;
    for (int* fd :
         {&f.vmm_log, &f.console, &f.rootfs, &f.image, &f.control, &f.vsock, &f.run_dir, &kvm_fd})
      *fd = lift(*fd);
    const int null_fd = lift(source.files.null.get());
    vmm::snapshot::MemoryBase memory_base = source.memory_base;
    memory_base.fd = lift(memory_base.fd);
    gate_fd = lift(gate_fd);
    detach(report_fd, go_fd, f, null_fd, {kvm_fd, memory_base.fd, gate_fd});
    phases.mark("detach");
    // It shares the source's uid and PID namespace: from here on it may signal only itself.
    if (source.jailed)
      if (int err = jail::load(jail::signal_self_only(::getpid())))
        throw_errno("seccomp: restrict kill and tgkill to the branch itself", err);
    // Wait until the parent has forked every sibling: a child that ran now would slow the
    // remaining forks down (they copy the page tables this one is faulting on).
    char c;
    while (::read(kGoFd, &c, 1) < 0 && errno == EINTR) {
    }
    Fd(kGoFd).reset();
    phases.mark("go");
    log::info("branch " + t.id + " of " + source_id + ": forked VMM " + std::to_string(::getpid()));
    VmRun run{source.root, store::paths_in(t.dir, t.run_dir), store::vm_config_from_json(t.config)};
    if (run.cfg.id != t.id)
      fail("the configuration sent is for sandbox " + run.cfg.id + ", not " + t.id);
    // These are the numbers this process inherited or was sent: its own from now on.
    run.files.kvm = Fd(kvm_fd);
    run.files.rootfs = Fd(f.rootfs);
    run.files.image = Fd(f.image);
    run.files.console = Fd(f.console);
    run.files.control = Fd(f.control);
    run.files.vsock = Fd(f.vsock);
    run.files.run_dir = Fd(f.run_dir);
    run.files.null = Fd(null_fd);
    run.memory = memory::GuestMemory::adopt(inherited.host_base(), inherited.size());
    run.snap = &snap;
    run.restore_from = "the state of " + source_id;
    run.memory_base = memory_base;
    run.host = source.host;
    run.jailed = source.jailed;
    run.vcpu_filter = source.vcpu_filter;
    if (t.image) run.hello_flags |= proto::Hello::kImage;
    if (t.network) run.hello_flags |= proto::Hello::kNetwork;
    run.expires_at = t.expires_at;
    run.on_expiry = t.on_expiry;
    phases.mark("config");
    run.on_running = [] { ::prctl(PR_SET_PDEATHSIG, 0); };
    run.start_gate = Fd(gate_fd);
    code = run_vm(run, Fd(kReportFd), phases);
  } catch (const std::exception& e) {
    log::error(std::string("branch ") + t.id + ": " + e.what());
    say(kReportFd, std::string("error: ") + e.what());
  }
  _exit(code);
}

// Kills and reaps `pids` (a failed branch op). Where kill is refused (EPERM: a branch branching)
// the gate's abort bytes end them instead, and this waits for that.
void kill_all(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) ::kill(pid, SIGKILL);
  for (pid_t pid : pids) {
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
}

// Reads one report line per pipe. Returns "" when all said "ok", else the first failure.
std::string collect(std::vector<Fd>& pipes, const std::vector<BranchTarget>& targets,
                    std::chrono::steady_clock::time_point deadline) {
  std::vector<std::string> got(pipes.size());
  std::vector<bool> done(pipes.size(), false);
  size_t left = pipes.size();
  while (left > 0) {
    std::vector<pollfd> pf;
    std::vector<size_t> idx;
    for (size_t i = 0; i < pipes.size(); i++)
      if (!done[i]) {
        pf.push_back({pipes[i].get(), POLLIN, 0});
        idx.push_back(i);
      }
    auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       deadline - std::chrono::steady_clock::now())
                       .count();
    if (left_ms <= 0) {
      for (size_t i : idx) return "branch " + targets[i].id + ": its VMM did not report in time";
    }
    int n = ::poll(pf.data(), pf.size(), static_cast<int>(left_ms));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("poll");
    }
    for (size_t k = 0; k < pf.size(); k++) {
      if (!pf[k].revents) continue;
      size_t i = idx[k];
      char buf[1024];
      ssize_t r = ::read(pipes[i].get(), buf, sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r > 0) got[i].append(buf, static_cast<size_t>(r));
      bool line = got[i].find('\n') != std::string::npos;
      if (!line && r > 0 && got[i].size() < 4096) continue;
      done[i] = true;
      left--;
      std::string msg = got[i].substr(0, got[i].find('\n'));
      if (msg != "ok")
        return "branch " + targets[i].id + ": " +
               (msg.empty() ? std::string("its VMM exited before it was ready") : msg);
    }
  }
  return "";
}

}  // namespace

std::vector<ForkedBranch> fork_branches(vmm::Machine& machine, const VmRun& source,
                                        const std::vector<BranchTarget>& targets,
                                        std::vector<Fd>& fds, std::vector<pid_t>& children,
                                        std::chrono::milliseconds timeout, ForkTimings* timings,
                                        const std::function<void()>& forked) {
  if (!machine.paused()) fail("branch: the VM must be paused first");
  if (targets.empty()) fail("branch: no targets");
  auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + timeout;
  ForkTimings tm;
  vmm::snapshot::Snapshot snap = machine.capture();
  tm.capture_ms = ms_since(t0);
  const std::string source_id = machine.id();

  std::vector<pid_t> started;
  std::vector<Fd> pipes;
  const pid_t self = ::getpid();
  int go[2], gate[2];
  if (::pipe2(go, O_CLOEXEC) != 0) throw_errno("pipe2");
  Fd go_rd(go[0]), go_wr(go[1]);
  if (::pipe2(gate, O_CLOEXEC) != 0) throw_errno("pipe2");
  Fd gate_rd(gate[0]), gate_wr(gate[1]);
  try {
    auto t1 = std::chrono::steady_clock::now();
    size_t first_fd = 0;
    for (const auto& t : targets) {
      TargetFds tf = target_fds(t, fds, first_fd);
      first_fd += proto::control::fd_count(t);
      int pfd[2];
      if (::pipe2(pfd, O_CLOEXEC) != 0) throw_errno("pipe2");
      Fd rd(pfd[0]), wr(pfd[1]);
      pid_t pid = ::fork();
      if (pid < 0) throw_errno("fork for branch " + t.id);
      if (pid == 0)
        become_branch(source, t, tf, machine.memory(), snap, source_id, machine.kvm_fd(), wr.get(),
                      go_rd.get(), gate_rd.get(), self);
      started.push_back(pid);
      pipes.push_back(std::move(rd));
    }
    go_wr.reset();  // go: every child sees EOF
    tm.fork_ms = ms_since(t1);
    if (forked) forked();
    auto t2 = std::chrono::steady_clock::now();
    std::string err = collect(pipes, targets, deadline);
    tm.ready_ms = ms_since(t2);
    if (!err.empty()) fail(err);
    gate_wr.reset();  // every branch is runnable: their guests start
  } catch (...) {
    // A byte per child on the gate: a child that said "ok" reads it and ends instead of starting
    // its guest. It matters where kill cannot reach them: a source that is itself a branch may
    // signal only itself (jail::signal_self_only).
    const std::string abort(started.size(), 'x');
    if (!abort.empty()) (void)!::write(gate_wr.get(), abort.data(), abort.size());
    kill_all(started);
    throw;
  }
  std::vector<ForkedBranch> out;
  for (size_t i = 0; i < targets.size(); i++) {
    out.push_back({targets[i].id, started[i]});
    children.push_back(started[i]);
  }
  if (timings) *timings = tm;
  return out;
}

}  // namespace space::monitor
