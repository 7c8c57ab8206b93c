// Shared pieces of the session operations; see session_util.h.
#include "core/session_util.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/control_client.h"
#include "core/expiry.h"
#include "core/jail_setup.h"
#include "core/launcher.h"
#include "core/sandbox.h"
#include "core/session.h"
#include "store/config.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::core {

std::string checkpoint_dir(const store::SandboxPaths& p) {
  return p.dir + "/checkpoint";
}

LockedSandbox lock_sandbox(const store::Context& ctx, const std::string& id) {
  LockedSandbox s;
  s.p = store::sandbox_paths(ctx.root, id);
  store::ensure_store(ctx, store::StoreUse::Existing);
  require_sandbox(s.p, id);
  try {
    s.lock.emplace(s.p.lock, /*nonblocking=*/true);
    if (!s.lock->held()) {
      log::warn("sandbox " + id + " is busy (another space command holds it); waiting");
      s.lock.reset();
      s.lock.emplace(s.p.lock);
    }
  } catch (const Error& e) {
    if (e.err() == ENOENT) require_sandbox(s.p, id);  // removed while we looked
    throw;
  }
  require_sandbox(s.p, id);
  s.st = store::read_state(s.p.state);
  s.observed = store::observed_status(s.st);
  return s;
}

void wrong_status(const LockedSandbox& s, const std::string& verb) {
  const std::string& id = s.st.id;
  const store::Status o = s.observed;
  bool has_checkpoint = fs::exists(checkpoint_dir(s.p) + "/vmstate");
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

proc::Child start_restored(const store::Context& ctx, const store::SandboxPaths& p,
                           store::SandboxState& st, const std::string& restore_dir,
                           proc::SignalGuard& sig) {
  store::HostConfig hc = store::load_host_config(ctx.root);
  VmmLaunch launch =
      launch_vmm(ctx, hc, p, st.id, VmmMode{restore_dir, false, "", expires_at(st), st.on_expiry},
                 JailRequest{st.id, st.id, st.vcpus, st.memory_mib});
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
    wait_started(launch.child, launch.ready, p, /*guest=*/false, sig, boot_timeout_seconds());
    st.pid = launch.uid ? served_by(p.control_sock) : launch.child.pid();
  } catch (Error& e) {
    launch.child = proc::Child();  // SIGKILL + reap before reading its log
    remove_sandbox_cgroup(launch.cgroup);
    st = before;
    try {
      store::write_state(p.state, st, fs::Sync::Volatile);  // as it was: resumable again
    } catch (const Error& again) {
      log::error("sandbox " + st.id + ": could not restore its record: " + again.what());
    }
    throw Error(std::string(e.what()) + log_tails(p), e.err(), e.hint());
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

}  // namespace space::core
