// Control groups for sandboxes, on cgroup v2 (one unified hierarchy) or v1 (one hierarchy per
// controller; this build host has only v1). A sandbox's VMM runs in its own group,
// <parent>/<id> (parent "space" by default), with
//   memory  the guest's RAM plus an overhead for the VMM itself (limit; charged page cache is
//           reclaimed before anything is killed),
//   pids    a ceiling on processes and threads (vCPUs, branch forks in flight),
//   cpu     a quota of (vCPUs + 1/2) cores and a weight proportional to the vCPUs,
//   io      membership (v2 io / v1 blkio: accounting and the default fair weight), where the
//           controller exists.
// The jail's PID 1 waits in <parent>/init, a group without limits, so that it outlives a sandbox
// whose branches still run. Groups are made and removed by the privileged CLI; a process joins
// one by writing "0" to a cgroup.procs file it opened before entering its jail.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace space::jail {

enum class CgroupVersion { None, V1, V2 };

// Where the controllers are mounted.
struct CgroupLayout {
  CgroupVersion version = CgroupVersion::None;
  std::string v2;                         // the cgroup2 mount (v2)
  std::map<std::string, std::string> v1;  // controller -> its hierarchy's mount (v1)
};

// The controllers space uses, as v1 names (v2: memory, pids, cpu, io).
inline constexpr const char* kV1Controllers[] = {"memory", "pids", "cpu", "cpuacct", "blkio"};

// The layout described by /proc/self/mountinfo text, whose cgroup2 mount counts as v2 only when
// it offers the memory controller (a hybrid host's empty "unified" mount does not). `fs_prefix`
// is prepended to every mount point (for tests).
CgroupLayout parse_mountinfo(std::string_view text, const std::string& fs_prefix = "",
                             const std::string& v2_controllers = "");
// This host's layout (reads /proc/self/mountinfo and the cgroup2 root's cgroup.controllers).
CgroupLayout detect_layout();
// "v1", "v2" or "none".
const char* version_name(CgroupVersion v);

// Whether moving a process between cgroups is fast on this host. Every move takes one host-wide
// lock, whose writer waits for an RCU grace period (5-7 ms measured on a PVM guest) when no
// move came shortly before, unless a cgroup hierarchy is mounted with `favordynmods` (it
// applies to all, v1 included: the lock is shared).
struct CgroupMoves {
  bool favored = false;  // some cgroup or cgroup2 mount has favordynmods
  std::string cgroup2;   // the first cgroup2 mount, which a remount can give favordynmods
};
// From /proc/self/mountinfo text.
CgroupMoves parse_moves(std::string_view mountinfo);
// This host's (reads /proc/self/mountinfo).
CgroupMoves detect_moves();

struct CgroupLimits {
  uint64_t memory_bytes = 0;  // 0 = no limit
  uint32_t pids = 0;          // 0 = no limit
  uint32_t cpu_percent = 0;   // quota: 100 = one core; 0 = none
  uint32_t cpu_weight =
      100;  // v2 scale (1..10000; 100 is the default); v1 shares = weight*1024/100
};

// Limits for a VM of `vcpus` and `memory_mib`, with `overhead_mib` for the VMM.
CgroupLimits sandbox_limits(uint32_t vcpus, uint32_t memory_mib, uint32_t overhead_mib);
// The most processes and threads a sandbox's group may hold.
constexpr uint32_t kSandboxPids = 512;

// The group's directory in each hierarchy (`rel` like "space/ID").
std::vector<std::string> group_dirs(const CgroupLayout& l, const std::string& rel);
// The cgroup.procs file of each of those directories.
std::vector<std::string> procs_files(const CgroupLayout& l, const std::string& rel);
// Makes group `rel` (and its parents; on v2 enabling the controllers in their
// cgroup.subtree_control) and writes `limits`. An existing group is reused and its limits
// rewritten. Throws Error naming the file.
void create_group(const CgroupLayout& l, const std::string& rel, const CgroupLimits& limits);
// Removes group `rel` in every hierarchy, those of controllers space does not use included; a
// missing one is fine. Returns false (and leaves it) if it still has processes.
bool remove_group(const CgroupLayout& l, const std::string& rel);
// Sets group `rel`'s CPU bandwidth to `quota_us` of CPU time per `period_us` (v1
// cpu.cfs_quota_us and cpu.cfs_period_us, v2 cpu.max), as an OCI bundle's
// linux.resources.cpu asks. Throws naming the file on a write error; does nothing without a cpu
// controller.
void set_cpu_quota(const CgroupLayout& l, const std::string& rel, uint64_t quota_us,
                   uint64_t period_us);
// The processes in group `rel` now, over every hierarchy, each once, in the caller's PID
// namespace. A missing group has none.
std::vector<int> group_pids(const CgroupLayout& l, const std::string& rel);
// Moves the calling process into group `rel`'s cgroup.procs files (writes "0"). Throws.
void join_group(const CgroupLayout& l, const std::string& rel);

// Freezes (or thaws) every process in group `rel` through cgroup v1's freezer hierarchy and
// waits, up to `wait_ms`, until the kernel says they all are (freezer.state FROZEN or THAWED).
// Stopping a gvisor sandbox this way takes about a millisecond, against a runsc start for `runsc
// pause`. Returns false, having done nothing, when the host has no v1 freezer hierarchy or the
// group is not in it (cgroup v2's cgroup.freeze would freeze the gvisor monitor too: it shares
// the sandbox's group there). Throws naming the file on an error, or when the freeze does not
// finish in time (the group is then thawed again).
bool freeze_group(const std::string& rel, bool frozen, int wait_ms = 2000);

struct CgroupUsage {
  std::optional<uint64_t> cpu_ns;             // CPU time of the group's processes
  std::optional<uint64_t> memory_bytes;       // charged memory now
  std::optional<uint64_t> memory_peak_bytes;  // its peak
  std::optional<uint64_t> memory_limit_bytes;
  std::optional<uint64_t> pids;
};
// What group `rel` uses now; fields the host does not report stay empty.
CgroupUsage read_usage(const CgroupLayout& l, const std::string& rel);

}  // namespace space::jail
