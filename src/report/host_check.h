// `space check`: can this host run sandboxes, and if not, what to fix. It lists both engines
// (launch/engine.h), whether each can run here and which is the default; the default engine's
// needs are problems, the other's notes. It inspects the kind of
// KVM host (hardware VMX/SVM or the PVM software hypervisor), /dev/kvm and its capabilities, the
// guest kernel and rootfs image a cold boot would use, the store (btrfs root or loopback image,
// mounted or not, size and free space), whether the default template exists, and whether VMMs
// can be jailed here: each mechanism (namespaces, seccomp, cgroups) is tried, not assumed, and then
// a whole jailed VMM start without a VM (launch/vmm_probe.h).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/pool.h"
#include "launch/engine.h"
#include "store/context.h"
#include "store/store.h"
#include "util/json.h"

namespace space::report {

struct HostReport {
  std::string host;  // "hardware", "pvm" or "unknown"
  std::string kvm_device = "/dev/kvm";
  bool kvm_ok = false;                                  // opened, API version 12
  int api_version = 0;                                  // 0 when /dev/kvm could not be opened
  std::vector<std::pair<std::string, int>> extensions;  // KVM_CHECK_EXTENSION results by name
  std::string kernel, rootfs;                           // the paths create would use
  bool kernel_present = false, rootfs_present = false;
  std::string root;              // absolute root directory
  store::StoreStatus store;      // which store case applies, and its state
  std::string default_template;  // config.toml [defaults] template, else "default"
  bool default_template_present = false;
  std::string default_template_problem;  // why create cannot restore it; "" when it can
  // The jail (jail/): what config.toml [jail] asks for and what this host gives.
  bool jail_enabled = true;
  std::string jail_uids;   // "FIRST..LAST"
  std::string namespaces;  // "ok" or why a jail's namespaces cannot be made
  std::string seccomp;     // "ok" or why a filter cannot be installed
  bool cgroups_enabled = true;
  std::string cgroups;             // "v1 (memory, pids, ...)", "v2 (...)" or "none"
  bool cgroup_moves_fast = false;  // a cgroup mount has favordynmods (jail/cgroup.h)
  std::string jail_start;          // "ok", why a jailed VMM (no VM) could not start, or why
                                   // that was not tried
  double jail_start_ms = 0;        // its start, launch to ready, when "ok"
  // The engines (launch/engine.h): each one's status, and the default with what chose it.
  std::vector<launch::EngineStatus> engines;
  std::string default_engine, default_engine_source;
  // The gvisor warm pools (core/pool.h): [engine.gvisor] pool, and each gvisor template's.
  uint32_t pool_wanted = 0;
  std::vector<core::PoolStatus> pools;
  std::vector<std::string> notes;     // advice that does not prevent use
  std::vector<std::string> problems;  // each names what to fix; empty means usable
  bool usable() const { return problems.empty(); }
};

// Inspects the host. Never throws for a host problem: those go to `problems`.
HostReport check_host(const store::Context& ctx);
// The report as JSON (for --format json) and as aligned text lines.
json::Value host_report_json(const HostReport& r);
std::string host_report_text(const HostReport& r);

}  // namespace space::report
