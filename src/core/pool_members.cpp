// The pools' members; see pool_members.h.
#include "core/pool_members.h"

#include <algorithm>
#include <cerrno>

#include "core/sandbox.h"
#include "launch/jail_setup.h"
#include "store/store.h"
#include "util/daemon.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"

namespace space::core {
namespace {

bool alive(const store::SandboxState& st) {
  return st.pid > 0 && proc::ProcessRef::open(st.pid, st.pid_start_time).has_value();
}

}  // namespace

PoolDir pool_dir(const store::Context& ctx, const std::string& tmpl) {
  PoolDir d;
  d.dir = store::template_pool_dir(ctx.root, tmpl);
  d.claim_lock = d.dir + "/.lock";
  d.fill_lock = d.dir + "/.fill.lock";
  d.fill_log = d.dir + "/.fill.log";
  return d;
}

bool member_ready(const PoolMember& m) {
  return m.st && m.st->status == store::Status::Running && m.st->id == m.name && alive(*m.st) &&
         fs::is_dir(m.p.run_dir);
}

bool member_starting(const PoolMember& m) {
  return !m.st || (m.st->status == store::Status::Creating && m.st->id == m.name);
}

std::vector<PoolMember> pool_members(const store::Context& ctx, const std::string& tmpl) {
  std::vector<PoolMember> out;
  const std::string dir = pool_dir(ctx, tmpl).dir;
  if (!fs::is_dir(dir)) return out;
  for (const auto& name : fs::list_dir(dir)) {
    if (name.empty() || name[0] == '.') continue;  // the locks and the refill's log
    PoolMember m;
    m.name = name;
    try {
      m.p = store::pool_member_paths(ctx.root, tmpl, name);
    } catch (const Error& e) {
      log::warn("pool of " + tmpl + ": " + e.what());
      continue;
    }
    try {
      if (fs::exists(m.p.state)) m.st = store::read_state(m.p.state);
    } catch (const Error& e) {
      log::warn("pool member " + name + ": " + e.what());
    }
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const PoolMember& a, const PoolMember& b) {
    std::string ca = a.st ? a.st->created : "", cb = b.st ? b.st->created : "";
    return ca != cb ? ca < cb : a.name < b.name;
  });
  return out;
}

void discard_member(const store::HostConfig& hc, const PoolMember& m) {
  try {
    std::string cgroup = launch::sandbox_cgroup_name(hc, m.name);
    if (m.st) {
      if (alive(*m.st)) stop_vmm(*m.st, m.p, 0);
      if (!m.st->cgroup.empty()) cgroup = m.st->cgroup;
      if (m.st->id != m.name) {  // a claim that died before its commit: its run dir moved
        std::string moved = store::sandbox_run_dir(m.st->id);
        std::string marker;
        try {
          marker = fs::read_file(moved + "/" + kPoolMarker, 256);
        } catch (const Error&) {
        }
        if (marker == m.name) fs::remove_tree(moved);
      }
    }
    launch::remove_sandbox_cgroup(cgroup);
    fs::remove_tree(m.p.run_dir);
    store::remove_store_tree(m.p.dir);
    log::info("pool member " + m.name + " removed");
  } catch (const std::exception& e) {
    log::error("pool member " + m.name + ": could not remove it: " + e.what());
  }
}

uint32_t drain_pool(const store::Context& ctx, const std::string& tmpl) {
  PoolDir d = pool_dir(ctx, tmpl);
  if (!fs::is_dir(d.dir)) {
    if (!fs::is_dir(store::template_dir(ctx.root, tmpl)))
      throw Error("template " + tmpl + " does not exist", ENOENT,
                  "'space template pool' shows the pools");
    return 0;  // a template without a pool
  }
  store::HostConfig hc = store::load_host_config(ctx.root);
  Fd filling = daemon::take_lock(d.fill_lock, kPoolFillWaitMs);
  if (!filling) fail("a refill of the pool of " + tmpl + " does not end");
  Fd lock = daemon::take_lock(d.claim_lock, kPoolLockWaitMs);
  if (!lock) fail("the pool of template " + tmpl + " stays locked");
  uint32_t n = 0;
  for (const auto& m : pool_members(ctx, tmpl)) {
    discard_member(hc, m);
    n++;
  }
  fs::remove_tree(d.dir);  // the locks go with it: a refill started meanwhile makes its own
  return n;
}

}  // namespace space::core
