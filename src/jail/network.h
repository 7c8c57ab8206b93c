// The network namespace every jailed VMM of a host joins: one namespace with no device but its
// loopback, which stays down, kept alive by a bind mount of its nsfs file (/run/space/.netns:
// launch/jail_setup.h), made on first use and kept for the host's uptime, as the jails' shared
// "init" cgroup is. Creating a namespace per VMM cost 0.43 ms of each create on the build
// machine (and the kernel's cleanup of each one on destroy); joining one costs a setns().
// Sharing it gives jails nothing to share: a VMM's seccomp filter lets it make only AF_UNIX
// sockets, a namespace without an up device carries no IP traffic, and pathname sockets are
// reached through each jail's own, empty root. What jails of one host have in common there is
// the abstract Unix socket names, which no space process uses.
#pragma once
#include <string>

#include "util/fd.h"

namespace space::jail {

// The shared namespace at `path`, opened (O_RDONLY, close-on-exec) for setns(). Made when
// `path` holds no network namespace (missing, or a file a reboot unmounted), under an flock on
// `path`.lock, so that concurrent callers make one. Refused (Error) if the namespace there is
// the caller's own. Requires CAP_SYS_ADMIN to make it.
Fd shared_network(const std::string& path);

}  // namespace space::jail
