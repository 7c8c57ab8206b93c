// The jails' shared network namespace; see network.h. It is kept as jail/ns_file.h keeps one: a
// forked child unshares a new network namespace and holds it while we bind-mount its
// /proc/PID/ns/net onto the path.
#include "jail/network.h"

#include <sched.h>

#include <cerrno>

#include "jail/ns_file.h"

namespace space::jail {

Fd shared_network(const std::string& path) {
  static const NamespaceKind kind{CLONE_NEWNET, "net", "network", "the jails' network namespace"};
  return kept_namespace(path, path + ".lock", kind, nullptr,
                        [] { return ::unshare(CLONE_NEWNET) == 0 ? 0 : errno; });
}

}  // namespace space::jail
