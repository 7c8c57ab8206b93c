// `destroy`: stop the VMM (politely, then SIGKILL), then remove the run directory and delete the
// sandbox's subvolume (or its plain directory, for sandboxes made before the btrfs store).
// The VMM is addressed through a pidfd opened only after its start time matched the record, so a
// recycled pid is never signalled. The sandbox's cgroup goes too, recorded or not.
#include <signal.h>

#include <cerrno>

#include "core/net.h"
#include "core/sandbox.h"
#include "core/session_util.h"
#include "cred/hooks.h"
#include "launch/control_client.h"
#include "launch/jail_setup.h"
#include "store/config.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"
#include "util/socket.h"

namespace space::core {

namespace {
constexpr int kPoliteStopMs = 5000;
constexpr int kKillWaitMs = 10000;
}  // namespace

void remove_half_made(const store::Context& ctx, const store::SandboxPaths& p,
                      const std::string& id, const std::string& cgroup) noexcept {
  try {
    launch::remove_sandbox_cgroup(cgroup);
    set_policy(ctx, id, std::nullopt);
    fs::remove_tree(p.run_dir);
    store::remove_store_tree(p.dir);
  } catch (const std::exception& cleanup) {
    log::error("create " + id + ": cleanup failed: " + cleanup.what());
  }
}

void require_sandbox(const store::SandboxPaths& p, const std::string& id) {
  if (!fs::exists(p.state))
    throw Error("sandbox " + id + " does not exist", ENOENT, "'space list' shows the sandboxes");
}

void stop_vmm(const store::SandboxState& st, const store::SandboxPaths& p, int polite_ms) {
  auto vmm = proc::ProcessRef::open(st.pid, st.pid_start_time);
  if (!vmm) return;
  if (polite_ms > 0) {
    auto dl = net::Deadline::after_ms(polite_ms);
    try {
      launch::control_call(p.control_sock, proto::control::StopRequest{}, polite_ms);
      if (vmm->wait_exit(dl.remaining_ms())) return;
      log::info("sandbox " + st.id + ": the VMM did not stop in time; killing it");
    } catch (const Error& e) {
      log::info("sandbox " + st.id + ": " + e.what() + "; killing the VMM");
    }
  }
  vmm->signal(SIGKILL);
  if (!vmm->wait_exit(kKillWaitMs))
    fail("VMM process " + std::to_string(st.pid) + " did not exit after SIGKILL",
         "check 'ps -o stat,wchan -p " + std::to_string(st.pid) + "' (stuck in the kernel?)");
}

void destroy_sandbox(const store::Context& ctx, const std::string& id, bool force) {
  store::SandboxPaths p = store::sandbox_paths(ctx.root, id);
  store::ensure_store(
      ctx, store::StoreUse::Existing);  // after a reboot: mount the image to see the sandbox
  if (!fs::is_dir(p.dir)) require_sandbox(p, id);  // throws: no directory, no state
  try {
    // With --force, a command stuck on a stopped VMM is freed by killing that VMM (which
    // destroy would kill anyway); without, destroy says what is stuck.
    std::optional<store::SandboxLock> lock;
    try {
      lock.emplace(wait_sandbox_lock(p, id, force ? StoppedVmm::Kill : StoppedVmm::Fail));
    } catch (const Error&) {
      // The command we freed (a create) removed its half-made sandbox itself: what we came for.
      if (force && !fs::is_dir(p.dir)) {
        log::info("sandbox " + id + " was removed by the command that held it");
        cred::revoke_sandbox_grants(ctx, id, "destroy", /*forget=*/true);  // whatever it left
        set_policy(ctx, id, std::nullopt);
        return;
      }
      throw;
    }
    std::optional<store::SandboxState> st;
    if (fs::exists(p.state)) {
      try {
        st = store::read_state(p.state);
      } catch (Error& e) {
        if (!force) throw e.set_hint("'space destroy --force " + id + "' removes it anyway");
        log::warn("destroy " + id + ": " + e.what() + "; removing it anyway (--force)");
      }
    }
    if (st && st->id != id) {  // another sandbox's record: its VMM and cgroup are not ours
      log::warn("destroy " + id + ": its record names sandbox " + st->id +
                "; removing the directory without touching that sandbox's VMM");
      st.reset();
    }
    cred::revoke_sandbox_grants(ctx, id, "destroy", /*forget=*/true);
    set_policy(ctx, id, std::nullopt);  // its audit log stays, for `space net log`
    if (st) {
      stop_vmm(*st, p, force ? 0 : kPoliteStopMs);
      launch::remove_sandbox_cgroup(st->cgroup);
    }
    // The group its id names, too: a create, resume or branch killed after making the group
    // and before recording it leaves one that no record names (and perhaps a VMM in it).
    std::string named;
    try {
      named = launch::sandbox_cgroup_name(store::load_host_config(ctx.root), id);
    } catch (const Error& e) {
      log::warn("destroy " + id + ": " + e.what() + "; its cgroup, if any, is left");
    }
    if (!named.empty() && (!st || named != st->cgroup)) launch::remove_sandbox_cgroup(named);
    // A directory without state.json is the remains of an interrupted create: remove it too.
    fs::remove_tree(p.run_dir);
    if (!st || st->engine == "gvisor") store::remove_run_aliases(id);  // a pool's (core/pool.h)
    store::remove_store_tree(p.dir);
  } catch (Error& e) {
    e.add_context("destroy sandbox " + id);
    throw;
  }
}

}  // namespace space::core
