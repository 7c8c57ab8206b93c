// The mount namespace every jailed VMM starts its own from: one namespace whose only mount is an
// empty, read-only tmpfs, kept alive by a bind mount of its nsfs file (/run/space/.mnt/ns:
// launch/jail_setup.h), made on first use and kept for the host's uptime, as the jails' network
// namespace is (jail/network.h). A VMM (and its jail's PID 1) joins it, unshares a private copy
// (one mount to copy, where unsharing from the host's namespace copies every host mount), and
// mounts its run directory on top as its root (jail/root.h). Nothing is unmounted on that path:
// detaching the host's tree after a pivot_root waited for an RCU grace period in every jailed start
// (0.1 ms on a quiet host, 1.4 ms median and 4.8 ms p90 with both cores busy, measured by
// bench-jail.sh on 2026-12-05).
//
// The nsfs file sits in a directory that is a private bind mount of itself: a mount namespace's
// file may not propagate into other namespaces (the kernel refuses the bind on a shared mount,
// such as systemd's /run, with EINVAL).
#pragma once
#include <string>

#include "util/fd.h"

namespace space::jail {

// The base namespace under `dir` (<dir>/ns), opened (O_RDONLY, close-on-exec) for setns(). When
// <dir>/ns holds no mount namespace (missing, or a file a reboot unmounted), makes `dir` (mode
// 0700) a private mount of itself if it is not a mount yet, and a new base namespace at <dir>/ns,
// under an flock on <dir>.lock, so that concurrent callers make one. Refused (Error) if the
// namespace there is the caller's own. Requires CAP_SYS_ADMIN to make it.
Fd shared_mount_base(const std::string& dir);

}  // namespace space::jail
