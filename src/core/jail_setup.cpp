// The CLI's side of the jail; see jail_setup.h.
#include "core/jail_setup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "jail/cgroup.h"
#include "store/btrfs.h"
#include "store/paths.h"
#include "util/error.h"
#include "util/log.h"

namespace space::core {
namespace {

jail::CgroupLayout host_layout() {
  jail::CgroupLayout l = jail::detect_layout();
  if (l.version == jail::CgroupVersion::None)
    fail("jail: this host has no cgroup hierarchy with the memory controller",
         "mount one, or set [jail] cgroups = false in config.toml");
  return l;
}

std::string make_group(const store::HostConfig& hc, const jail::CgroupLayout& l,
                       const std::string& id, uint32_t vcpus, uint32_t memory_mib) {
  std::string rel = hc.jail_cgroup_parent + "/" + id;
  jail::create_group(l, rel, jail::sandbox_limits(vcpus, memory_mib, hc.jail_memory_overhead_mib));
  return rel;
}

}  // namespace

std::string uid_claims_dir() {
  return store::run_base() + "/.uids";
}

VmmJail prepare_jail(const store::HostConfig& hc, const std::string& key,
                     const std::string& cgroup_id, uint32_t vcpus, uint32_t memory_mib) {
  VmmJail j;
  if (!hc.jail_enable) return j;
  jail::UidClaim claim =
      jail::claim_uid(uid_claims_dir(), {hc.jail_uid_first, hc.jail_uid_count}, key);
  j.uid = claim.uid;
  j.uid_lock = std::move(claim.lock);
  if (hc.jail_cgroups && !cgroup_id.empty()) {
    jail::CgroupLayout l = host_layout();
    j.init_cgroup = hc.jail_cgroup_parent + "/init";
    jail::create_group(l, j.init_cgroup, {});
    j.cgroup = make_group(hc, l, cgroup_id, vcpus, memory_mib);
  }
  return j;
}

std::string make_sandbox_cgroup(const store::HostConfig& hc, const std::string& id, uint32_t vcpus,
                                uint32_t memory_mib) {
  if (!hc.jail_enable || !hc.jail_cgroups) return "";
  return make_group(hc, host_layout(), id, vcpus, memory_mib);
}

std::vector<std::string> cgroup_procs_files(const std::string& rel) {
  if (rel.empty()) return {};
  return jail::procs_files(jail::detect_layout(), rel);
}

void remove_sandbox_cgroup(const std::string& rel) {
  if (rel.empty()) return;
  jail::CgroupLayout l = jail::detect_layout();
  try {
    for (int i = 0; i < 100; i++) {
      if (jail::remove_group(l, rel)) return;
      ::usleep(10'000);
    }
    log::warn("cgroup " + rel + " still has processes; left in place");
  } catch (const Error& e) {
    log::warn(std::string("cgroup ") + rel + ": " + e.what());
  }
}

uint64_t disk_limit_for(const store::SandboxPaths& p, uint64_t disk_bytes, uint32_t memory_mib) {
  struct stat st {};
  uint64_t root = ::stat(p.rootfs.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
  return disk_bytes + root + (uint64_t(memory_mib) << 20) + (64ull << 20);
}

void limit_sandbox_disk(const store::Context& ctx, const store::SandboxPaths& p, uint64_t bytes) {
  try {
    store::btrfs::enable_quota(store::store_paths(ctx.root).dir);
    store::btrfs::limit_exclusive(p.dir, bytes);
  } catch (Error& e) {
    e.add_context("--disk-size");
    if (e.hint().empty()) e.set_hint("the store must be btrfs with quota support");
    throw;
  }
}

}  // namespace space::core
