// Namespaces that outlive their maker: a forked child makes one (unshare and whatever set-up it
// needs), and a bind mount of its nsfs file (/proc/PID/ns/KIND) onto a plain file keeps it for the
// host's uptime; later callers open that file and setns() into it. The jails' network namespace
// (jail/network.h) and base mount namespace (jail/mount_base.h) are made so. The file is made
// once, under an flock, so that concurrent first callers make one namespace; a file left without
// its mount (after a reboot, where the directory is not a tmpfs) gets a new one.
#pragma once
#include <functional>
#include <string>

#include "util/fd.h"

namespace space::jail {

// A kind of namespace: its clone flag, its name under /proc/PID/ns, and what messages call it.
struct NamespaceKind {
  int type;          // CLONE_NEWNET, CLONE_NEWNS, ...
  const char* file;  // "net", "mnt", ...
  const char* name;  // "network", "mount", ...
  const char* what;  // "the jails' network namespace"
};

// True if `fd` refers to a namespace of `type` (NS_GET_NSTYPE).
bool is_namespace(int fd, int type);

// The namespace of `kind` kept at `path`, opened (O_RDONLY, close-on-exec) for setns(). When
// `path` holds none, under an flock on `lock`: calls `prepare` (it may throw), creates `path`
// (mode 0400) if missing, and has a forked child run `setup`, which makes the namespace (it must
// make only system calls, and returns 0 or an errno), while its nsfs file is bind-mounted onto
// `path`. Refused (Error) if the namespace there is the caller's own. Requires CAP_SYS_ADMIN to
// make one.
Fd kept_namespace(const std::string& path, const std::string& lock, const NamespaceKind& kind,
                  const std::function<void()>& prepare, const std::function<int()>& setup);

}  // namespace space::jail
