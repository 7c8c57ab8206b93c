// The gvisor warm pool; see pool.h.
#include "core/pool.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "core/create_gvisor.h"
#include "core/expiry.h"
#include "core/idle.h"
#include "core/net.h"
#include "core/pool_members.h"
#include "core/sandbox.h"
#include "core/template.h"
#include "launch/control_client.h"
#include "store/btrfs.h"
#include "store/store.h"
#include "store/vm_config.h"
#include "util/daemon.h"
#include "util/env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"
#include "util/procfs.h"

namespace space::core {
namespace {

constexpr int kAdoptTimeoutMs = 5'000;
constexpr uint64_t kMemoryReserveMib = 1024;
constexpr int kRefillNice = 10;

uint64_t mem_available_mib() {
  try {
    std::string text = fs::read_file("/proc/meminfo", 1 << 16);
    size_t at = text.find("MemAvailable:");
    if (at == std::string::npos) return 0;
    return std::stoull(text.substr(at + 13)) / 1024;
  } catch (const std::exception&) {
    return 0;
  }
}

// Why no member may be started now ("" = one may).
std::string memory_short(uint64_t member_mib) {
  uint64_t avail = mem_available_mib();
  if (avail >= member_mib + kMemoryReserveMib) return "";
  return "memory is short: " + std::to_string(avail) + " MiB available, and a member needs " +
         std::to_string(member_mib) + " MiB plus " + std::to_string(kMemoryReserveMib) +
         " MiB left over";
}

// A gvisor template's metadata; throws if `tmpl` is missing or a VM template.
TemplateMeta gvisor_template(const store::Context& ctx, const std::string& tmpl) {
  const std::string dir = store::template_dir(ctx.root, tmpl);
  store::ensure_store(ctx, store::StoreUse::Existing);
  if (!fs::exists(dir))
    throw Error("template " + tmpl + " does not exist", ENOENT,
                "build it: space template build --engine gvisor " + tmpl);
  TemplateMeta m = read_template_meta(dir);
  if (m.engine != "gvisor")
    fail("template " + tmpl + " is a VM template: pools are the gvisor engine's",
         "build a gvisor one: space template build --engine gvisor NAME");
  return m;
}

// Makes member `m` into sandbox `id` at paths `p` (see pool.h); false if it could not be handed
// out before the commit (the member is then removed). After the commit a failure destroys the
// sandbox and returns false, so that create starts one afresh under the same id.
bool adopt(const store::Context& ctx, const store::HostConfig& hc, const CreateOptions& opts,
           const PoolMember& m, const std::string& id, const store::SandboxPaths& p,
           const std::optional<egress::Policy>& policy, proc::SignalGuard& sig,
           store::SandboxState& out) {
  store::SandboxState st = *m.st;
  try {
    st.id = id;
    st.status = store::Status::Creating;
    st.created = store::rfc3339_now();
    set_expiry(st, opts.ttl_ms, opts.on_expiry);
    set_idle(st, opts.idle, hc);
    store::write_state(m.p.state, st, fs::Sync::Volatile);  // the intent: discard() reads it
    store::VmConfig cfg = store::load_vm_config(m.p.config);
    cfg.id = id;
    for (std::string* path : {&cfg.rootfs, &cfg.image_disk, &cfg.overlay_dir})  // a resume's
      if (path->rfind(m.p.dir + "/", 0) == 0) *path = p.dir + path->substr(m.p.dir.size());
    store::save_vm_config(m.p.config, cfg, fs::Sync::Volatile);
    if (::rename(m.p.run_dir.c_str(), p.run_dir.c_str()) != 0)
      throw_errno("rename " + m.p.run_dir + " to " + p.run_dir);
    if (::rename(m.p.dir.c_str(), p.dir.c_str()) != 0) {  // the commit
      int err = errno;
      ::rename(p.run_dir.c_str(), m.p.run_dir.c_str());
      errno = err;
      throw_errno("rename " + m.p.dir + " to " + p.dir);
    }
  } catch (const Error& e) {
    log::warn("pool member " + m.name + " could not become sandbox " + id + ": " + e.what());
    discard_member(hc, m);
    return false;
  }
  int interrupted = 0;  // a signal taken here: the create ends, it does not start afresh
  try {
    // runsc recorded its state's paths (its lock, its control socket) under the member's run
    // directory: they lead to the moved one through this link, which destroy removes.
    if (::symlink(id.c_str(), m.p.run_dir.c_str()) != 0)
      throw_errno("link " + m.p.run_dir + " to " + p.run_dir);
    if ((interrupted = sig.take())) fail("interrupted by " + proc::signal_name(interrupted));
    set_policy(ctx, id, policy);  // before the guest's first Hello, as a create's
    launch::control_call(p.control_sock,
                         proto::control::AdoptRequest{id, expires_at(st), st.on_expiry},
                         kAdoptTimeoutMs);
    ::unlink((p.run_dir + "/" + kPoolMarker).c_str());
    st.status = store::Status::Running;
    store::write_state(p.state, st, fs::Sync::Volatile);
    ensure_network(ctx, id);
    if (needs_reaper(st)) ensure_reaper(ctx);
  } catch (Error& e) {
    try {
      destroy_sandbox(ctx, id, /*force=*/true);
    } catch (const Error& cleanup) {
      log::error("sandbox " + id + ": could not remove it: " + cleanup.what());
    }
    if (interrupted || sig.take()) {
      e.add_context("create sandbox " + id);
      throw;
    }
    log::warn("pool member " + m.name + " could not become sandbox " + id + ": " + e.what() +
              "; starting one instead");
    return false;
  }
  log::info("sandbox " + id + " is pool member " + m.name + " of template " + st.template_name);
  out = st;
  return true;
}

// Every thread of process `pid` and of its descendants to nice `nice` (on Linux a thread's
// own). Best effort: a thread or child that has just ended is skipped.
void renice_tree(pid_t pid, int nice) {
  for (pid_t tid : proc::threads_of(pid)) ::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice);
  for (pid_t child : proc::children_of(pid)) renice_tree(child, nice);
}

// One new member of `tmpl`'s pool, started (or an Error). A background refill runs at nice
// kRefillNice, and so do the processes it starts, so that a sandbox just handed out, whose first
// command follows its create, comes first; yet a refill on a busy host still moves. Once ready,
// the member (its monitor, runsc's sandbox and gofer, every thread) goes back to nice 0, as a
// sandbox that any create may take.
void start_member(const store::Context& ctx, const store::HostConfig& hc, const std::string& tmpl,
                  bool background) {
  const std::string name = store::generate_id();
  store::SandboxPaths p = store::pool_member_paths(ctx.root, tmpl, name);
  CreateOptions o;
  o.engine = "gvisor";
  o.template_name = tmpl;
  if (background) renice_tree(::getpid(), kRefillNice);
  store::SandboxState st = create_gvisor_sandbox(ctx, hc, o, name, p, std::nullopt, tmpl);
  if (background) renice_tree(st.pid, 0);
  fs::write_file_atomic(p.run_dir + "/" + kPoolMarker, name, 0600, fs::Sync::Volatile);
  log::info("pool of " + tmpl + ": member " + name + " ready");
}

PoolStatus status_of(const store::Context& ctx, const store::HostConfig& hc,
                     const TemplateMeta& t) {
  PoolStatus s;
  s.template_name = t.name;
  s.wanted = hc.gvisor_pool;
  s.memory_mib = t.memory_mib;
  for (const auto& m : pool_members(ctx, t.name)) {
    if (member_ready(m))
      s.ready++;
    else if (member_starting(m))
      s.starting++;
  }
  s.filling = daemon::running(pool_dir(ctx, t.name).fill_lock);
  if (s.wanted > s.ready + s.starting) s.memory_note = memory_short(t.memory_mib);
  return s;
}

}  // namespace

bool pool_can_serve(const CreateOptions& o) {
  return o.image.empty() && !o.disk_bytes && !o.cold && !o.vcpus && !o.memory_mib &&
         o.rootfs.empty() && o.kernel.empty();
}

std::optional<store::SandboxState> claim_pooled(const store::Context& ctx,
                                                const store::HostConfig& hc,
                                                const CreateOptions& opts, const std::string& id,
                                                const store::SandboxPaths& p,
                                                const std::optional<egress::Policy>& policy) {
  if (!hc.gvisor_pool || !pool_can_serve(opts)) return std::nullopt;
  proc::SignalGuard sig;
  store::StorePaths sp = store::ensure_store(ctx, store::StoreUse::Create);
  std::optional<TemplateMeta> tmpl = choose_gvisor_template(sp, hc, opts);
  if (!tmpl) return std::nullopt;
  const PoolDir d = pool_dir(ctx, tmpl->name);
  std::optional<store::SandboxState> out;
  if (fs::is_dir(d.dir) && !fs::exists(p.dir) && !fs::exists(p.run_dir)) {
    Fd lock = daemon::take_lock(d.claim_lock, kPoolLockWaitMs);
    if (!lock) fail("the pool of template " + tmpl->name + " stays locked");
    for (const auto& m : pool_members(ctx, tmpl->name)) {
      if (!member_ready(m)) continue;
      store::SandboxState st;
      if (adopt(ctx, hc, opts, m, id, p, policy, sig, st)) {
        out = st;
        break;
      }
    }
  }
  refill_pool_later(ctx, hc, tmpl->name);
  return out;
}

void refill_pool_later(const store::Context& ctx, const store::HostConfig& hc,
                       const std::string& tmpl) noexcept {
  try {
    const PoolDir d = pool_dir(ctx, tmpl);
    if (!hc.gvisor_pool && !fs::is_dir(d.dir)) return;
    fs::mkdir_p(d.dir, 0700);
    if (daemon::running(d.fill_lock)) return;
    std::vector<std::string> argv = {"/proc/self/exe", "--root",      fs::absolute(ctx.root),
                                     "--log-level",    ctx.log_level, "--log-format",
                                     ctx.log_format,   "__pool-fill", tmpl};
    proc::SpawnOptions o;
    o.env = env::daemon_environment();
    proc::spawn_detached(argv, d.fill_log, o).release();
  } catch (const std::exception& e) {
    log::warn("pool of " + tmpl + ": no refill started: " + e.what());
  }
}

PoolStatus fill_pool(const store::Context& ctx, const std::string& tmpl, bool wait) {
  store::HostConfig hc = store::load_host_config(ctx.root);
  TemplateMeta t = gvisor_template(ctx, tmpl);
  const PoolDir d = pool_dir(ctx, tmpl);
  fs::mkdir_p(d.dir, 0700);
  Fd filling = daemon::take_lock(d.fill_lock, wait ? kPoolFillWaitMs : 0);
  if (!filling && !wait) return status_of(ctx, hc, t);  // the one at work does it
  if (!filling) fail("another refill of the pool of " + tmpl + " does not end");
  {
    Fd lock = daemon::take_lock(d.claim_lock, kPoolLockWaitMs);
    if (!lock) fail("the pool of template " + tmpl + " stays locked");
    uint32_t kept = 0;
    for (const auto& m : pool_members(ctx, tmpl)) {
      if (member_ready(m) && kept < hc.gvisor_pool)
        kept++;
      else
        discard_member(hc, m);  // dead, half made by a refill that died, or over the number
    }
  }
  for (uint32_t have = status_of(ctx, hc, t).ready; have < hc.gvisor_pool; have++) {
    std::string why = memory_short(t.memory_mib);
    if (!why.empty()) {
      log::warn("pool of " + tmpl + ": " + why + "; no more members for now");
      break;
    }
    start_member(ctx, hc, tmpl, /*background=*/!wait);
  }
  filling.reset();  // so that the status says whether another refill runs, not this one
  return status_of(ctx, hc, t);
}

std::vector<PoolStatus> pool_status(const store::Context& ctx) {
  std::vector<PoolStatus> out;
  store::HostConfig hc = store::load_host_config(ctx.root);
  for (const auto& t : list_templates(ctx)) {
    if (!t.meta || t.meta->engine != "gvisor") continue;
    out.push_back(status_of(ctx, hc, *t.meta));
  }
  return out;
}

}  // namespace space::core
