// The VMM's side of the credential path: a VsockHostRoute that sends the guest's connections to
// host port proto::kCredentialPort to the helper's socket for this sandbox,
// <cred_dir>/s/<id>.sock. When that socket does not answer and no helper is running (it stops
// when idle), the route starts one (`space __credd`, waiting at most 5 s for it, on the event
// loop) and dials again; when a helper is running, this sandbox has no grant and the guest's
// connection is refused at once. The VMM forwards bytes only; it never holds, parses or logs
// a request or a value.
#pragma once
#include <map>
#include <string>

#include "devices/virtio/vsock_route.h"

namespace space::monitor {

// The routes for sandbox `id` of `root` whose credential directory is `cred_dir`; none when
// `cred_dir` is "" (a template build) or the socket path is too long (logged).
std::map<uint32_t, devices::VsockHostRoute> cred_routes(const std::string& root,
                                                        const std::string& cred_dir,
                                                        const std::string& id);

}  // namespace space::monitor
