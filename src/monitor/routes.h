// Where a VMM's guest->host connections go, by name in its run directory (its working
// directory: a jailed VMM reaches nothing by absolute path). Firecracker's convention covers
// ports in general (vsock.sock_<port>, a socket whoever serves that port binds there); two ports
// are routed to the host's helpers instead: proto::kCredentialPort to cred.sock, where the
// credential helper takes this sandbox's requests for secrets, and proto::kEgressPort to
// egress.sock, where the network broker takes its outbound connections. Both helpers are started
// by the CLI (never by a VMM: nothing in a jail may run a program) and stay up while a sandbox
// needs them; a socket that does not answer means the sandbox has no grant or no network, and the
// guest's connection is refused. The VMM forwards bytes only; it never parses them.
#pragma once
#include <cstdint>
#include <map>

#include "devices/virtio/vsock_route.h"

namespace space::monitor {

inline constexpr const char* kVsockSocket = "vsock.sock";    // host side of virtio-vsock
inline constexpr const char* kCredSocket = "cred.sock";      // the credential helper's
inline constexpr const char* kEgressSocket = "egress.sock";  // the network broker's

// The routes of a sandbox's VMM (a template build has none).
std::map<uint32_t, devices::VsockHostRoute> sandbox_routes();

}  // namespace space::monitor
