// The VMM's side of the credential path: a VsockHostRoute that sends the guest's connections to
// host port proto::kCredentialPort to the helper's socket for this sandbox,
// <cred_dir>/s/<id>.sock, and starts the helper (`space __credd`, waiting at most ~2 s for it)
// when that socket does not answer. The VMM forwards bytes only; it never holds, parses or logs
// a request or a value.
#pragma once
#include <map>
#include <string>

#include "devices/virtio/vsock_route.h"

namespace space::cred {

// The routes for sandbox `id` of `root` whose credential directory is `cred_dir`; none when
// `cred_dir` is "" (a template build) or the socket path is too long (logged).
std::map<uint32_t, VsockHostRoute> vmm_routes(const std::string& root, const std::string& cred_dir,
                                              const std::string& id);

}  // namespace space::cred
