// The VMM's side of the network path: a VsockHostRoute that sends the guest's connections to
// host port proto::kEgressPort to the network broker's socket for this sandbox,
// <run base>/<id>/egress.sock. When that socket does not answer and the sandbox has a policy,
// the route asks the broker to look again, or starts it (`space __egress`, waiting at most 5 s,
// on the event loop), and dials again; a sandbox without a policy has no network and its
// guest's connection is refused at once. The VMM forwards bytes only; it never parses a request.
#pragma once
#include <map>
#include <string>

#include "devices/virtio/vsock_route.h"

namespace space::monitor {

// The route for sandbox `id` of `root`.
std::map<uint32_t, devices::VsockHostRoute> egress_routes(const std::string& root,
                                                          const std::string& id);

}  // namespace space::monitor
