// Branch, fast path: a paused VMM forks itself into N branch VMMs. The parent captures its vCPU,
// VM and device state once; each fork()ed child becomes a session leader of its own, logs to its
// branch's vmm.log, closes every fd it inherited but /dev/kvm, /dev/null, the memory file and
// the descriptors the CLI sent for it (its logs, disks, sockets and run directory: a jailed VMM
// opens nothing by path, and a branch shares its source's jail, uid, seccomp filters and
// cgroup until the CLI moves it), builds a new KVM VM over the guest memory it inherited (shared
// copy-on-write with the parent and its siblings; the kvm_run mappings are MADV_DONTFORK, so
// nothing of the parent's VM stays alive in it), restores the captured state with its branch's
// own disk, sockets and id (run_vm), and writes "ok" (its VM runnable) or "error: ..." on a
// pipe. Its vCPUs start only once every sibling said "ok" (EOF on a "gate" pipe), so the guests
// that run do not slow down the set-up of the siblings still restoring. Until it reports "ok" a
// child dies with its parent (PR_SET_PDEATHSIG), so a source VMM that dies mid-branch leaves
// no VMM the CLI does not know of. The restore resets vsock connections, and the host's next Hello
// gives fresh entropy and clock. The children stay this process's children: their pids go into
// `children`, and the VMM reaps them on SIGCHLD.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "monitor/vmm_main.h"
#include "proto/control.h"
#include "util/fd.h"
#include "vmm/machine.h"

namespace space::monitor {

// A branch to make: its id, its files' directory (config.json with its disk path, logs, state)
// and its socket directory, as the branch request names them.
using BranchTarget = proto::control::BranchTarget;

struct ForkedBranch {
  std::string id;
  pid_t pid = 0;
};

struct ForkTimings {
  double capture_ms = 0, fork_ms = 0, ready_ms = 0;
};

// Requires `machine` paused; `source` is its run and `fds` the targets' descriptors, in order
// (proto::control::fd_count). Calls `forked` (if set) once every child exists, before waiting for
// them: the children own copy-on-write copies of the memory by then, so the caller may resume the
// source there. Returns once every child reported "ok". If one fails, or `timeout` passes first,
// kills every child started and throws with the first failure's message.
std::vector<ForkedBranch> fork_branches(vmm::Machine& machine, const VmRun& source,
                                        const std::vector<BranchTarget>& targets,
                                        std::vector<Fd>& fds, std::vector<pid_t>& children,
                                        std::chrono::milliseconds timeout,
                                        ForkTimings* timings = nullptr,
                                        const std::function<void()>& forked = {});

}  // namespace space::monitor
