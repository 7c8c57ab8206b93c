// VsockHostRoute: a guest->host vsock port served by another Unix socket than Firecracker's
// "<uds_path>_<port>". The VMM routes the credential port (proto::kCredentialPort) to the
// credential helper's socket for this sandbox, and the egress port (proto::kEgressPort) to the
// network broker's, this way. The device only forwards bytes; it never
// reads them.
#pragma once
#include <functional>
#include <string>

namespace space::devices {

struct VsockHostRoute {
  std::string path;  // connect to this Unix socket instead
  // Called (on the event loop thread, device mutex held) when connecting fails with ENOENT or
  // ECONNREFUSED: may start the peer, blocking briefly. True = try connecting once more.
  std::function<bool()> start;
};

}  // namespace space::devices
