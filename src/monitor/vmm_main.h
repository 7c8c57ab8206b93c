// Entry point of the per-sandbox VMM process (`space __vmm ID [--restore DIR] [--jail-uid U]`).
#pragma once
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

#include "jail/seccomp.h"
#include "memory/guest_memory.h"
#include "proto/vmm_args.h"
#include "store/paths.h"
#include "store/vm_config.h"
#include "util/fd.h"
#include "util/phase_log.h"
#include "vmm/host.h"
#include "vmm/snapshot.h"
#include "vmm/snapshot_memory.h"

namespace space::monitor {

// What the VMM runs with: its launch arguments (proto/vmm_args.h, decoded by cli/cmd_vmm.cpp)
// and the run directory (the global --root).
struct VmmOptions : proto::VmmArgs {
  std::string root;  // run directory
};

// What a VMM works with, opened before it enters its jail (or handed over with a branch request):
// a jailed VMM opens nothing by path.
struct VmmFiles {
  Fd kvm;      // /dev/kvm
  Fd rootfs;   // the root disk
  Fd image;    // the image disk, invalid for an empty slot
  Fd kernel;   // the ELF vmlinux, for a cold boot
  Fd console;  // console.log, append-only
  Fd control;  // the control socket, bound (served with listen() by whoever runs the VM)
  Fd vsock;    // vsock.sock, bound
  Fd run_dir;  // the run directory, made the working directory by run_vm; closed once jailed (the
               // jail's root is that directory, and ".." from a host directory escapes it)
  Fd null;     // /dev/null, stdin for branch children
  Fd memory;   // the memory file RAM maps (a restore): kept open as the base of memory diffs
};

// One VMM run, however it started: a cold boot (no snap), a restore from files (vmm_main), or a
// branch forked from a running VMM (branch_fork.h), which passes the memory it inherited.
struct VmRun {
  std::string root;           // the run directory (--root)
  store::SandboxPaths paths;  // for messages: everything is used through `files`
  store::VmConfig cfg;
  VmmFiles files;
  std::optional<memory::GuestMemory> memory;      // empty: fresh anonymous RAM of cfg.memory_mib
  const vmm::snapshot::Snapshot* snap = nullptr;  // set: restore this state instead of booting
  std::string restore_from;                       // where snap came from, for error messages
  vmm::snapshot::MemoryBase memory_base;  // the file `memory` privately maps (path "" if anonymous)
  uint32_t hello_flags = 0;               // proto::Hello flags of this guest (image, network)
  vmm::HostKind host = vmm::HostKind::Unknown;
  bool jailed = false;
  std::optional<jail::Program> vcpu_filter;  // loaded on each vCPU thread (jailed)
  // The expiry backstop (core/expiry.h): past expires_at plus the grace, the VMM stops its guest
  // ("destroy") or pauses it ("checkpoint"), in case no reaper ended the sandbox.
  int64_t expires_at = 0;
  std::string on_expiry;
  std::function<void()> on_running;  // called once the vCPUs run, just before "ok" is reported
  // Set for a branch: "ok" is reported (after on_running) once its VM is runnable, and its vCPUs
  // start only at EOF on this pipe, once the source has every sibling's "ok" (branch_fork.h).
  Fd start_gate;
};

// Builds the machine, serves its control socket and runs it until the guest stops or a stop
// request or signal arrives; reports "ok" or "error: ..." on `ready`. Returns the exit code.
int run_vm(VmRun& run, Fd ready, PhaseLog& phases);

// Runs the VMM until the guest stops or a stop request arrives; returns the process exit code.
int vmm_main(const VmmOptions& opts);

}  // namespace space::monitor
