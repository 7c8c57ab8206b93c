// The CLI's side of the jail; see jail_setup.h.
#include "launch/jail_setup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "jail/cgroup.h"
#include "jail/mount_base.h"
#include "jail/network.h"
#include "store/btrfs.h"
#include "store/paths.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"
#include "util/procfs.h"

namespace space::launch {
namespace {

jail::CgroupLayout host_layout() {
  jail::CgroupLayout l = jail::detect_layout();
  if (l.version == jail::CgroupVersion::None)
    fail("jail: this host has no cgroup hierarchy with the memory controller",
         "mount one, or set [jail] cgroups = false in config.toml");
  return l;
}

// Makes sandbox group `rel` with the limits of a VM of `vcpus` and `memory_mib`.
void make_group(const store::HostConfig& hc, const jail::CgroupLayout& l, const std::string& rel,
                uint32_t vcpus, uint32_t memory_mib) {
  jail::create_group(l, rel, jail::sandbox_limits(vcpus, memory_mib, hc.jail_memory_overhead_mib));
}

// True if /proc/<pid>/cgroup puts `pid` in group `rel` in some hierarchy.
bool in_group(pid_t pid, const std::string& rel) {
  std::string text;
  try {
    text = fs::read_file("/proc/" + std::to_string(pid) + "/cgroup", 64 * 1024);
  } catch (const Error&) {
    return false;
  }
  return text.find(":/" + rel + "\n") != std::string::npos;
}

// SIGKILLs every process in group `rel`, each through a pidfd checked against the group after it
// was opened, so that a pid recycled since the group was read is never signalled.
void kill_group_members(const jail::CgroupLayout& l, const std::string& rel) {
  for (int pid : jail::group_pids(l, rel)) {
    auto start = proc::start_time(pid);
    if (!start) continue;
    auto ref = proc::ProcessRef::open(pid, *start);
    if (!ref || !in_group(pid, rel)) continue;
    log::info("cgroup " + rel + ": killing process " + std::to_string(pid) + " left in it");
    try {
      ref->signal(SIGKILL);
    } catch (const Error& e) {
      log::warn("cgroup " + rel + ": " + e.what());
    }
  }
}

// The cgroup.procs files of group `rel`, opened for writing.
std::vector<Fd> open_procs(const jail::CgroupLayout& l, const std::string& rel) {
  std::vector<Fd> out;
  for (const auto& f : jail::procs_files(l, rel)) {
    Fd fd(::open(f.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) throw_errno("open " + f);
    out.push_back(std::move(fd));
  }
  return out;
}

}  // namespace

std::string uid_claims_dir() {
  return store::run_base() + "/.uids";
}

std::string jails_namespace_dir() {
  const std::string dir = "/run/space";
  fs::ensure_private_dir(dir, 0700);
  return dir;
}

VmmJail prepare_jail(const store::HostConfig& hc, const std::string& key,
                     const std::string& cgroup_id) {
  VmmJail j;
  if (!hc.jail_enable) return j;
  jail::UidClaim claim =
      jail::claim_uid(uid_claims_dir(), {hc.jail_uid_first, hc.jail_uid_count}, key);
  j.uid = claim.uid;
  j.uid_lock = std::move(claim.lock);
  const std::string ns_dir = jails_namespace_dir();
  j.network = jail::shared_network(ns_dir + "/.netns");
  j.mount_base = jail::shared_mount_base(ns_dir + "/.mnt");
  if (hc.jail_cgroups && !cgroup_id.empty()) {
    j.cgroup = sandbox_cgroup_name(hc, cgroup_id);
    j.init_cgroup = hc.jail_cgroup_parent + "/init";
  }
  return j;
}

JailGroups make_jail_groups(const store::HostConfig& hc, const VmmJail& j, uint32_t vcpus,
                            uint32_t memory_mib) {
  JailGroups g;
  if (j.cgroup.empty()) return g;
  jail::CgroupLayout l = host_layout();
  make_group(hc, l, j.cgroup, vcpus, memory_mib);
  g.procs = open_procs(l, j.cgroup);
  // The init group is made once, with no limits (its files keep the kernel's defaults), the first
  // time its cgroup.procs files are missing.
  try {
    g.init_procs = open_procs(l, j.init_cgroup);
  } catch (const Error& e) {
    if (e.err() != ENOENT) throw;
    jail::create_group(l, j.init_cgroup, {});
    g.init_procs = open_procs(l, j.init_cgroup);
  }
  return g;
}

std::string make_sandbox_cgroup(const store::HostConfig& hc, const std::string& id, uint32_t vcpus,
                                uint32_t memory_mib) {
  std::string rel = sandbox_cgroup_name(hc, id);
  if (!rel.empty()) make_group(hc, host_layout(), rel, vcpus, memory_mib);
  return rel;
}

void make_gvisor_cgroup(const std::string& rel, uint32_t vcpus, uint32_t memory_mib) {
  jail::CgroupLayout l = jail::detect_layout();
  if (l.version == jail::CgroupVersion::None)
    fail("the gvisor engine needs a cgroup hierarchy with the memory controller",
         "mount one (cgroup2 on /sys/fs/cgroup), or use --engine vm");
  // The memory limit is the sandbox's size itself, which runsc reads from the group and gVisor's
  // kernel shows as MemTotal: runsc's own memory counts within it, as when runsc made the group.
  jail::CgroupLimits lim = jail::sandbox_limits(vcpus, memory_mib, 0);
  lim.cpu_percent = 0;
  jail::create_group(l, rel, lim);
}

std::string sandbox_cgroup_name(const store::HostConfig& hc, const std::string& id) {
  if (!hc.jail_enable || !hc.jail_cgroups) return "";
  return store::sandbox_entry(hc.jail_cgroup_parent, id);
}

std::vector<std::string> cgroup_procs_files(const std::string& rel) {
  if (rel.empty()) return {};
  return jail::procs_files(jail::detect_layout(), rel);
}

void remove_sandbox_cgroup(const std::string& rel) {
  if (rel.empty()) return;
  jail::CgroupLayout l = jail::detect_layout();
  try {
    // A gvisor sandbox paused through the freezer, whose monitor died: its processes die of
    // their SIGKILL only once thawed.
    jail::freeze_group(rel, false);
  } catch (const Error& e) {
    log::warn(std::string("cgroup ") + rel + ": " + e.what());
  }
  try {
    for (int i = 0; i < 100; i++) {
      if (jail::remove_group(l, rel)) return;
      // Its VMM is gone, so whatever is left there is a process of the sandbox that no record
      // names (a branch VMM forked for a branch command that was killed before it recorded it).
      kill_group_members(l, rel);
      ::usleep(10'000);
    }
    log::warn("cgroup " + rel + " still has processes; left in place");
  } catch (const Error& e) {
    log::warn(std::string("cgroup ") + rel + ": " + e.what());
  }
}

uint64_t disk_limit_for(const store::SandboxPaths& p, uint64_t disk_bytes, uint32_t memory_mib) {
  auto size_of = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
  };
  // An image disk larger than a default [limits] disk_size counts at its own size: the guest
  // then meets ENOSPC in its file system before the quota.
  uint64_t disk = std::max(disk_bytes, size_of(p.image_disk));
  return disk + size_of(p.rootfs) + (uint64_t(memory_mib) << 20) + (64ull << 20);
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

}  // namespace space::launch
