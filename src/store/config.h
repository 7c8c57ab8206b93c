// Host configuration: <root>/config.toml, optional. It sets defaults for `create` and the size of
// the loopback btrfs store:
//   [defaults] cpus = 1, memory_mib = 256, kernel = "/abs/vmlinux", rootfs = "/abs/rootfs.ext4",
//              template = "default"
//   [store]    size_gib = 20
//   [cp]       max_size_mib = 1024   (the most a copy out of a sandbox writes; 0 = no limit)
//   [net]      allow = [...], max_connections = 64, audit_max_mib = 8   (egress/: the broker)
//   [egress]   ca_file = "/path.pem"   (more CAs the broker trusts when it checks a bound host)
//   [limits]   disk_size = "4G"   (a --disk-size quota for every sandbox created without one)
//   [jail]     enable = true, uid_first = 1000000000, uid_count = 1000000, cgroups = true,
//              cgroup_parent = "space", memory_overhead_mib = 128   (jail/: how VMMs are confined)
// Strict: an unknown table or key, a wrong type, an out-of-range number or a relative path is an
// Error naming the key and the file. Command-line flags override these values.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace space::store {

struct HostConfig {
  std::optional<uint32_t> cpus;              // [defaults] cpus
  std::optional<uint32_t> memory_mib;        // [defaults] memory_mib
  std::string kernel;                        // [defaults] kernel, "" when unset
  std::string rootfs;                        // [defaults] rootfs, "" when unset
  std::string default_template = "default";  // [defaults] template: what create restores from
  // [defaults] idle_pause, idle_checkpoint: a create's or run's --idle-pause and
  // --idle-checkpoint when not given (core/idle.h); 0 ("off", the default) = never.
  uint64_t idle_pause_ms = 0;
  uint64_t idle_checkpoint_ms = 0;
  // [limits] disk_size: what a sandbox created without --disk-size may keep in the store of its
  // own, counted as --disk-size counts it (launch/jail_setup.h, disk_limit_for); 0 = no quota.
  uint64_t limits_disk_bytes = 0;
  uint32_t store_size_gib = 20;     // [store] size_gib
  uint32_t cp_max_size_mib = 1024;  // [cp] max_size_mib: space cp's --max-size
  // [net] allow: the rules a sandbox gets when create/run has no --net (empty: no network).
  // Checked by core (the rule grammar is egress/policy.h's).
  std::vector<std::string> net_allow;
  uint32_t net_max_connections = 64;  // [net] max_connections: at once, per sandbox
  uint32_t net_audit_max_mib = 8;     // [net] audit_max_mib: the bound of each audit file
  // [egress] ca_file: CAs trusted, besides the system's, for the hosts secrets are bound to.
  std::string egress_ca_file;
  // [jail]: every VMM runs in a jail of its own (namespaces, an empty root, a uid of its own from
  // uid_first..uid_first+uid_count-1, seccomp) unless enable is false; with cgroups, in the cgroup
  // <cgroup_parent>/<id>, its memory limited to the guest's RAM plus memory_overhead_mib.
  bool jail_enable = true;
  uint32_t jail_uid_first = 1000000000;
  uint32_t jail_uid_count = 1000000;
  bool jail_cgroups = true;
  std::string jail_cgroup_parent = "space";
  uint32_t jail_memory_overhead_mib = 128;
  // [engine] default: the engine of a create, run or template build without --engine and
  // SPACE_ENGINE, "vm" or "gvisor"; "" when unset (launch/engine.h: then vm).
  std::string engine_default;
  // [engine.gvisor] runsc: the runsc binary ("" = runsc on PATH); platform: runsc's platform.
  std::string gvisor_runsc;
  std::string gvisor_platform = "systrap";
  // [engine.gvisor] pool: ready sandboxes kept per gvisor template, which create hands out
  // (core/pool.h); 0 = none.
  uint32_t gvisor_pool = 0;
};

// Limits shared with the create flags.
constexpr uint32_t kMaxCpus = 64;
constexpr uint32_t kMinMemoryMib = 32;
constexpr uint32_t kMaxMemoryMib = 1u << 20;
constexpr uint32_t kMaxPool = 64;  // [engine.gvisor] pool

// <root>/config.toml.
std::string host_config_path(const std::string& root);
// Reads <root>/config.toml; all defaults when the file does not exist.
HostConfig load_host_config(const std::string& root);
// Parses TOML text; `source` names it in error messages.
HostConfig parse_host_config(std::string_view text, const std::string& source);

// $SPACE_CACHE, or /var/cache/space when unset or empty.
std::string cache_dir();
// The guest kernel: `flag` (made absolute) > config.toml > <cache>/kernel/current/vmlinux.
std::string resolve_kernel(const HostConfig& c, const std::string& flag);
// The rootfs image: `flag` (made absolute) > config.toml > <cache>/rootfs/current/rootfs.ext4.
std::string resolve_rootfs(const HostConfig& c, const std::string& flag);

}  // namespace space::store
