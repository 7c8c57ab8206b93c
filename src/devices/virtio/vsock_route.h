// VsockHostRoute: a guest->host vsock port served by another Unix socket than Firecracker's
// "<uds_path>_<port>". The VMM routes the credential port (proto::kCredentialPort) to the
// credential helper's socket for this sandbox, and the egress port (proto::kEgressPort) to the
// network broker's, this way (monitor/routes.h). The device only forwards bytes; it never reads
// them. A peer that does not answer gets the guest's connection refused.
#pragma once
#include <string>

namespace space::devices {

struct VsockHostRoute {
  std::string path;  // connect to this Unix socket instead (relative: to the working directory)
};

}  // namespace space::devices
