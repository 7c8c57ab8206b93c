// Shared pieces of the session operations; see session_util.h.
#include "core/session_util.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/create_gvisor.h"
#include "core/expiry.h"
#include "core/sandbox.h"
#include "launch/control_client.h"
#include "launch/engine.h"
#include "launch/jail_setup.h"
#include "launch/launcher.h"
#include "store/config.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/procfs.h"

namespace space::core {

std::string checkpoint_dir(const store::SandboxPaths& p) {
  return p.dir + "/checkpoint";
}

namespace {

// How often a waiting command tries the lock again and looks at the sandbox's VMM; every
// kHolderScanEvery-th time it also looks for the holder, which scans every process's fds.
constexpr int kLockCheckMs = 100;
constexpr int kHolderScanEvery = 5;
constexpr int kMissingLockRounds = 10;

std::string describe_holders(const std::vector<pid_t>& holders) {
  if (holders.empty()) return "another space command holds it";
  std::string cmd = proc::command_line(holders.front());
  if (cmd.size() > 120) cmd = cmd.substr(0, 117) + "...";
  return "pid " + std::to_string(holders.front()) + (cmd.empty() ? "" : " (" + cmd + ")") +
         " holds it";
}

}  // namespace

store::SandboxLock wait_sandbox_lock(const store::SandboxPaths& p, const std::string& id,
                                     StoppedVmm on_stopped) {
  // The lock file is opened, never made: a destroy that holds it may be removing the directory
  // (which then loses state.json too, and the sandbox no longer exists). A sandbox whose record
  // stays without a lock file for kMissingLockRounds has none of its own: it is made then.
  int missing_rounds = 0;
  auto try_lock = [&] {
    store::SandboxLock l(p.lock, /*nonblocking=*/true, store::LockFile::Existing);
    if (!l.missing()) return l;
    require_sandbox(p, id);  // removed meanwhile: "does not exist"
    if (++missing_rounds < kMissingLockRounds) return l;
    return store::SandboxLock(p.lock, /*nonblocking=*/true, store::LockFile::Create);
  };
  store::SandboxLock lock = try_lock();
  if (lock.held()) return lock;
  log::warn(lock.missing()
                ? "sandbox " + id + " has no lock file (a destroy may be removing it); waiting"
                : "sandbox " + id + " is busy (" + describe_holders(proc::flock_holders(p.lock)) +
                      "); waiting");
  pid_t killed = 0;
  std::vector<pid_t> holders;
  for (int round = 1;; round++) {
    ::usleep(kLockCheckMs * 1000);
    lock = try_lock();
    if (lock.held()) return lock;
    if (round % kHolderScanEvery == 1) {  // a fresh scan: these processes hold it now
      holders = proc::flock_holders(p.lock);
      for (pid_t h : holders)
        if (proc::is_stopped(h))
          throw Error("sandbox " + id + " is locked by pid " + std::to_string(h) + " (" +
                          proc::command_line(h) + "), which is stopped (SIGSTOP or a debugger)",
                      EAGAIN, "'kill -CONT " + std::to_string(h) + "' lets it go on and finish");
    }
    // The holder may be waiting on the VMM (a create for its first answer, a pause for its
    // reply): a stopped VMM never gives one. The record is read without the lock (it is
    // replaced atomically).
    store::SandboxState st;
    try {
      st = store::read_state(p.state);
    } catch (const Error&) {
      continue;  // not written yet, or being replaced: look again
    }
    if (st.pid <= 0 || st.pid == killed || !proc::is_alive(st.pid, st.pid_start_time) ||
        !proc::is_stopped(st.pid))
      continue;
    const std::string vmm = std::to_string(st.pid);
    if (on_stopped == StoppedVmm::Kill) {
      log::warn("sandbox " + id + ": its VMM (pid " + vmm +
                ") is stopped and the command holding the lock waits for it; killing the VMM");
      if (auto ref = proc::ProcessRef::open(st.pid, st.pid_start_time)) ref->signal(SIGKILL);
      killed = st.pid;
      continue;
    }
    throw Error("sandbox " + id + " is busy (" + describe_holders(holders) + ") and its VMM (pid " +
                    vmm + ") is stopped (SIGSTOP or a debugger), so that command cannot finish",
                EAGAIN,
                "'kill -CONT " + vmm + "' lets both go on; 'space destroy --force " + id +
                    "' removes the sandbox");
  }
}

LockedSandbox lock_sandbox(const store::Context& ctx, const std::string& id) {
  LockedSandbox s;
  s.p = store::sandbox_paths(ctx.root, id);
  store::ensure_store(ctx, store::StoreUse::Existing);
  require_sandbox(s.p, id);
  s.lock.emplace(wait_sandbox_lock(s.p, id));
  require_sandbox(s.p, id);
  s.st = store::read_state(s.p.state);
  s.observed = store::observed_status(s.st);
  return s;
}

std::optional<LockedSandbox> try_lock_sandbox(const store::Context& ctx, const std::string& id) {
  LockedSandbox s;
  s.p = store::sandbox_paths(ctx.root, id);
  store::ensure_store(ctx, store::StoreUse::Existing);
  s.lock.emplace(s.p.lock, /*nonblocking=*/true, store::LockFile::Existing);
  if (!s.lock->held() || !fs::exists(s.p.state)) return std::nullopt;
  s.st = store::read_state(s.p.state);
  s.observed = store::observed_status(s.st);
  return s;
}

void wrong_status(const LockedSandbox& s, const std::string& verb) {
  const std::string& id = s.st.id;
  const store::Status o = s.observed;
  bool has_checkpoint = core::has_checkpoint(s.p, s.st);
  if (o == store::Status::Paused && verb == "pause")
    fail("sandbox " + id + " is already paused", "'space resume " + id + "' continues it");
  if (o == store::Status::Running && verb == "resume")
    fail("sandbox " + id + " is already running", "'space pause " + id + "' pauses it");
  if (o == store::Status::Checkpointed)
    fail("sandbox " + id + " is checkpointed: its VMM is stopped, so it cannot " + verb,
         "'space resume " + id + "' restores it from its checkpoint first");
  if (o == store::Status::Stopped)
    fail("sandbox " + id + " is stopped: it has no VMM, so it cannot " + verb,
         has_checkpoint
             ? "'space resume " + id + "' restores its last checkpoint"
             : "it has no checkpoint to resume from; 'space destroy " + id + "' removes it");
  if (o == store::Status::Creating)
    fail("sandbox " + id + " is still being created", "retry once 'space list' shows it running");
  fail("sandbox " + id + " is " + store::status_name(o) + ": it cannot " + verb);
}

bool has_checkpoint(const store::SandboxPaths& p, const store::SandboxState& st) {
  return fs::exists(checkpoint_dir(p) + "/" +
                    (st.engine == "gvisor" ? kGvisorCheckpointImage : "vmstate"));
}

proc::Child start_restored(const store::Context& ctx, const store::SandboxPaths& p,
                           store::SandboxState& st, const std::string& restore_dir,
                           proc::SignalGuard& sig) {
  store::HostConfig hc = store::load_host_config(ctx.root);
  const bool gvisor = st.engine == "gvisor";
  if (gvisor) {
    st.cgroup = hc.jail_cgroup_parent + "/" + st.id;
    launch::require_usable(launch::EngineChoice{launch::Engine::Gvisor, "the sandbox's record"},
                           launch::probe_gvisor_engine(hc));
    // A monitor killed with SIGKILL leaves runsc's sandbox running in its cgroup: end it before
    // its checkpoint runs again under the same id (make_run_dir then removes runsc's state).
    launch::remove_sandbox_cgroup(st.cgroup);
  }
  launch::VmmLaunch launch =
      gvisor ? launch_gvisor(ctx, hc, p, st, restore_dir)
             : launch::launch_vmm(
                   ctx, hc, p, st.id,
                   launch::VmmMode{restore_dir, false, "", expires_at(st), st.on_expiry},
                   launch::JailRequest{st.id, st.id, st.vcpus, st.memory_mib});
  // Recorded at once, as being created, with the process we started (the VMM, or its jail's
  // PID 1, whose end ends the VMM): if this command is killed before it records the VMM as
  // running, the sandbox shows as creating and destroy stops that process, where an unrecorded
  // VMM would run on beside a second one started by the next resume, on the same disk.
  const store::SandboxState before = st;
  st.status = store::Status::Creating;
  st.pid = launch.child.pid();
  st.pid_start_time = proc::start_time(st.pid).value_or(0);
  st.uid = launch.uid;
  st.cgroup = launch.cgroup;
  try {
    store::write_state(p.state, st, fs::Sync::Volatile);
    launch::wait_started(launch.child, launch.ready, p, /*guest=*/false, sig,
                         launch::boot_timeout_seconds(), gvisor ? "the gvisor monitor" : "the VMM");
    st.pid = launch.uid ? launch::served_by(p.control_sock) : launch.child.pid();
  } catch (Error& e) {
    launch.child = proc::Child();  // SIGKILL + reap before reading its log
    launch::remove_sandbox_cgroup(launch.cgroup);
    st = before;
    try {
      store::write_state(p.state, st, fs::Sync::Volatile);  // as it was: resumable again
    } catch (const Error& again) {
      log::error("sandbox " + st.id + ": could not restore its record: " + again.what());
    }
    throw Error(std::string(e.what()) + launch::log_tails(p), e.err(), e.hint());
  }
  st.pid_start_time = proc::start_time(st.pid).value_or(0);
  st.uid = launch.uid;
  st.cgroup = launch.cgroup;
  st.status = store::Status::Running;
  store::write_state(p.state, st, fs::Sync::Volatile);
  return std::move(launch.child);
}

void replace_disk(const std::string& disk, const std::string& from) {
  std::string tmp = disk + ".restore";
  ::unlink(tmp.c_str());
  fs::copy_file(from, tmp, 0600);
  if (std::rename(tmp.c_str(), disk.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw Error("rename " + tmp + " to " + disk + ": " + std::strerror(e), e);
  }
}

bool left_out_of_branch(const store::SandboxPaths& src, const std::string& rel) {
  auto in_dir = [&](const std::string& path) { return path.substr(src.dir.size() + 1); };
  const std::string checkpoint = in_dir(checkpoint_dir(src));
  for (const std::string& out :
       {in_dir(src.state), checkpoint, checkpoint + ".tmp", std::string("branch.tmp"),
        in_dir(src.console_log), in_dir(src.vmm_log), in_dir(src.lock)})
    if (rel == out) return true;
  return false;
}

}  // namespace space::core
