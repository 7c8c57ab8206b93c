// The jail's file system view and the namespaces a process can make for itself. A jailed VMM
// starts as PID 2 of a new PID namespace (the launcher clones the namespace's PID 1, which starts
// it: jail/init.h), opens everything it will need, then enter() gives it a mount, IPC and UTS
// namespace of its own, puts it in the jails' shared empty network namespace (jail/network.h),
// and makes its own run directory its root, read-only: its sockets and nothing else; no store,
// no other sandbox's run directory, no /proc, no /dev, no /sys. Nothing of the host's tree is
// reachable by path (the VMM's mount namespace is a copy of the jails' empty base,
// jail/mount_base.h; without one, the host's old root is detached); what the VMM uses it holds as
// descriptors (its disks, logs, sockets, /dev/kvm, the memory file: files, never a host
// directory, from which ".." would climb to the host's root), and its working directory is that
// root, where it dials its routes by relative name (devices/virtio/vsock_route.h). The empty
// network namespace has only a loopback device, down.
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
// makes `dir` (an existing directory) the root, read-only, nosuid, nodev and noexec, with nothing
// of the host's tree reachable and nothing propagating to the host (the working directory is then
// that root); sets the hostname to `hostname` (truncated to 64 bytes). Given `mount_base`, a
// descriptor of the jails' base mount namespace (jail/mount_base.h), the new mount namespace is a
// copy of that one with `dir` mounted over its root; without (-1, or on a kernel older than
// 5.12), a copy of the caller's, pivoted into `dir`, whose old root is detached. Requires
// CAP_SYS_ADMIN and that the caller is in a PID namespace other than the host's (refused
// otherwise, so that a jail never shares the host's PIDs by mistake). Throws Error naming the
// step.
void enter(const std::string& dir, const std::string& hostname, int network = kNewNetwork,
           PhaseLog* phases = nullptr, int mount_base = -1);
// True if the caller's PID namespace is not the one of the /proc it sees (not that of its PID 1;
// where that cannot be read, its NSpid has more than one entry): /proc must still be the host's,
// as it is before enter().
bool in_own_pid_namespace();

}  // namespace space::jail
