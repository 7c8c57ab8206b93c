// Entry point of the per-sandbox VMM process (`space __vmm ID [--restore DIR]`).
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "memory/guest_memory.h"
#include "store/paths.h"
#include "store/vm_config.h"
#include "util/fd.h"
#include "util/phase_log.h"
#include "vmm/snapshot.h"
#include "vmm/snapshot_memory.h"

namespace space::monitor {

struct VmmOptions {
  std::string root;         // run directory
  std::string id;           // sandbox id
  int ready_fd = -1;        // pipe to `create`: "ok\n" once running, or "error: <msg>\n"
  std::string dir;          // files (config.json, logs, disk) here instead of store/sandboxes/<id>:
  std::string run_dir;      // and sockets here; both set or both empty (a template build)
  std::string restore_dir;  // if set: resume the snapshot in this dir (vmstate + memory), no boot
  std::string shared_memory_dir;  // map its memory instead when its vmstate is the same snapshot
};

// One VMM run, however it started: a cold boot (no snap), a restore from files (vmm_main), or a
// branch forked from a running VMM (branch_fork.h), which passes the memory it inherited.
struct VmRun {
  std::string root;  // the run directory (--root), for the credential helper's route
  store::SandboxPaths paths;
  store::VmConfig cfg;
  std::optional<memory::GuestMemory> memory;      // empty: fresh anonymous RAM of cfg.memory_mib
  const vmm::snapshot::Snapshot* snap = nullptr;  // set: restore this state instead of booting
  std::string restore_from;                       // where snap came from, for error messages
  vmm::snapshot::MemoryBase memory_base;  // the file `memory` privately maps (path "" if anonymous)
  std::function<void()> on_running;       // called once the vCPUs run, just before "ok" is reported
};

// Builds the machine, serves its control socket and runs it until the guest stops or a stop
// request or signal arrives; reports "ok" or "error: ..." on `ready`. Returns the exit code.
int run_vm(VmRun& run, Fd ready, PhaseLog& phases);

// Runs the VMM until the guest stops or a stop request arrives; returns the process exit code.
int vmm_main(const VmmOptions& opts);

}  // namespace space::monitor
