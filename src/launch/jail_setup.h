// The privileged CLI's half of the jail (jail/): before a VMM starts, claim the uid it will run
// as and make its cgroup with limits from the VM's size; once it is gone (destroy, checkpoint, a
// failed start), remove the cgroup. The uid's claim ends by itself when the jail's last process
// exits. Settings come from config.toml's [jail] table (store/config.h).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "jail/uid_pool.h"
#include "store/config.h"
#include "store/context.h"
#include "store/paths.h"
#include "util/fd.h"

namespace space::launch {

struct VmmJail {
  uid_t uid = 0;            // 0: the VMM runs unjailed ([jail] enable = false)
  Fd uid_lock;              // the claim, handed to the jail's PID 1 (jail/uid_pool.h)
  Fd network;               // the jails' shared network namespace (jail/network.h)
  Fd mount_base;            // the jails' base mount namespace (jail/mount_base.h)
  std::string cgroup;       // the sandbox's group, "" = none; made by make_jail_groups()
  std::string init_cgroup;  // where the jail's PID 1 waits, "" = none
};

// The directory of the uid claims: <run base>/.uids.
std::string uid_claims_dir();
// Where the jails' shared namespaces are kept: /run/space, made (mode 0700) or checked as a
// private directory. It holds the network namespace at .netns and the base mount namespace at
// .mnt/ns (.mnt a private mount of itself), one of each per host whatever the run base
// (SPACE_RUN_DIR) and root, since they hold nothing of theirs.
std::string jails_namespace_dir();
// Prepares the jail of a VMM for `key` (a sandbox id, or "template:NAME"): a uid claim, the
// shared network namespace, the base mount namespace, and, when `cgroup_id` is not empty and
// cgroups are on, the names of the cgroup <parent>/<cgroup_id> and of the init group, which
// make_jail_groups() makes.
VmmJail prepare_jail(const store::HostConfig& hc, const std::string& key,
                     const std::string& cgroup_id);
// The cgroup.procs files of a jail's groups, open for writing.
struct JailGroups {
  std::vector<Fd> procs;       // the sandbox's group
  std::vector<Fd> init_procs;  // the init group
};
// Makes the groups `j` names (nothing when it names none): the sandbox's with limits for a VM of
// `vcpus` and `memory_mib`, and the init group the first time it is missing (no limits), and
// opens their cgroup.procs files. The jail's PID 1 calls it while the VMM starts (it would cost
// every create its time otherwise). Throws with a hint naming the [jail] setting when the host
// cannot; a group left half made is removed by the caller's cleanup (remove_sandbox_cgroup).
JailGroups make_jail_groups(const store::HostConfig& hc, const VmmJail& j, uint32_t vcpus,
                            uint32_t memory_mib);
// Makes the cgroup of sandbox `id` (a branch, whose VMM is forked, not started) and returns its
// relative path; "" when cgroups are off.
std::string make_sandbox_cgroup(const store::HostConfig& hc, const std::string& id, uint32_t vcpus,
                                uint32_t memory_mib);
// Makes cgroup `rel` (a gvisor sandbox's, <parent>/<id>, whatever [jail] cgroups says: its
// memory limit is enforced there) with the pids limit and CPU weight of a sandbox of `vcpus`, a
// memory limit of `memory_mib` itself (what the sandbox sees as its RAM), and no CPU quota yet: its
// monitor sets that once runsc has started the sandbox (monitor/gvisor_main.h).
void make_gvisor_cgroup(const std::string& rel, uint32_t vcpus, uint32_t memory_mib);
// The cgroup sandbox `id` gets (<parent>/<id>) when cgroups are on, else "": destroy removes
// it even when no record names it (a create, resume or branch killed after making it).
std::string sandbox_cgroup_name(const store::HostConfig& hc, const std::string& id);
// The cgroup.procs files of group `rel` (for a process to join it).
std::vector<std::string> cgroup_procs_files(const std::string& rel);
// Removes group `rel` ("" = nothing), SIGKILLing any process still in it (the caller has stopped
// the VMM: what is left is a process no record names), waiting up to a second for them to go;
// logs a warning if it is still busy.
void remove_sandbox_cgroup(const std::string& rel);

// What a sandbox given --disk-size `disk_bytes` (or [limits] disk_size) may keep in the store of
// its own (not shared with its template): that much for its image disk (or the disk's own size
// when larger), its root disk, its RAM (a checkpoint's memory) and 64 MiB for logs and records.
uint64_t disk_limit_for(const store::SandboxPaths& p, uint64_t disk_bytes, uint32_t memory_mib);
// Limits the sandbox's subvolume to `bytes` of its own (a btrfs qgroup; quotas are turned on for
// the store first). Throws with a hint when the store cannot.
void limit_sandbox_disk(const store::Context& ctx, const store::SandboxPaths& p, uint64_t bytes);

}  // namespace space::launch
