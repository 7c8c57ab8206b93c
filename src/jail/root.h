// The jail's file system view and the namespaces a process can make for itself. A jailed VMM
// starts as PID 1 of a new PID namespace (the launcher clones it so), opens everything it will
// need, then enter() gives it a mount, network, IPC and UTS namespace of its own and pivots its
// root into an empty, read-only tmpfs: no store, no other sandbox's run directory, no /proc, no
// /dev, no /sys. The old root is detached, so nothing of the host's tree is reachable by path;
// what the VMM uses it holds as descriptors (its disks, logs, sockets, /dev/kvm, the memory
// file), and its working directory is its own run directory, where it dials its routes by
// relative name (devices/virtio/vsock_route.h). The empty network namespace has only a loopback
// device, down.
#pragma once
#include <string>

namespace space::jail {

// Unshares the mount, network, IPC and UTS namespaces; makes every mount private (nothing
// propagates to the host); mounts an empty tmpfs over `mount_point` (an existing directory; in
// the new namespace only), pivots into it, detaches the old root and remounts the new one
// read-only; sets the hostname to `hostname` (truncated to 64 bytes). Requires CAP_SYS_ADMIN and
// that the caller is PID 1 of a PID namespace of its own (refused otherwise, so the host's mounts
// are never touched by mistake). Throws Error naming the step.
void enter(const std::string& mount_point, const std::string& hostname);

}  // namespace space::jail
