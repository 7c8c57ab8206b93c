// The jail's file system view and the namespaces a process can make for itself. A jailed VMM
// starts as PID 2 of a new PID namespace (the launcher clones the namespace's PID 1, which starts
// it: jail/init.h), opens everything it will need, then enter() gives it a mount, IPC and UTS
// namespace of its own, puts it in the jails' shared empty network namespace (jail/network.h),
// and pivots its root into its own run directory, read-only: its sockets and nothing else; no
// store, no other sandbox's run directory, no /proc, no /dev, no /sys. The old root is detached,
// so nothing of the host's tree is reachable by path; what the VMM uses it holds as descriptors
// (its disks, logs, sockets, /dev/kvm, the memory file: files, never a host directory, from which
// ".." would climb to the host's root), and its working directory is that root, where it dials its
// routes by relative name (devices/virtio/vsock_route.h). The empty network namespace has only a
// loopback device, down.
#pragma once
#include <string>

#include "util/phase_log.h"

namespace space::jail {

// What enter() does with the network namespace: a new one (unshare), the caller's (for a process
// whose seccomp filter allows no socket, such as the jail's PID 1), or, given a descriptor of one
// (jail/network.h), that one.
constexpr int kNewNetwork = -1;
constexpr int kKeepNetwork = -2;

// Unshares the mount, IPC and UTS namespaces and enters the network namespace `network` says;
// makes every mount private (nothing
// propagates to the host); makes `dir` (an existing directory) a mount of its own in the new
// namespace, pivots into it, detaches the old root and remounts the new one read-only, nosuid,
// nodev and noexec (the working directory is then that root); sets the hostname to `hostname`
// (truncated to 64 bytes). Requires CAP_SYS_ADMIN and that the caller is in a PID namespace other
// than the host's (refused otherwise, so that a jail never shares the host's PIDs by mistake).
// Throws Error naming the step.
void enter(const std::string& dir, const std::string& hostname, int network = kNewNetwork,
           PhaseLog* phases = nullptr);
// True if the caller's PID namespace is not the one of the /proc it sees (not that of its PID 1;
// where that cannot be read, its NSpid has more than one entry): /proc must still be the host's,
// as it is before enter().
bool in_own_pid_namespace();

}  // namespace space::jail
