// Listening sockets for the agent: AF_VSOCK in the guest, AF_UNIX for the --serve-unix test mode.
// Both are blocking, close-on-exec stream sockets; the event loop polls them before accept.
#pragma once
#include <cstdint>
#include <string>

#include "util/fd.h"

namespace space::guest {

// Listens on (VMADDR_CID_ANY, port). Throws space::Error on failure.
Fd listen_vsock(uint32_t port);
// Listens on the Unix socket `path`, replacing a stale socket file. Throws space::Error.
Fd listen_unix(const std::string& path);
// Accepts one connection (close-on-exec). Returns an invalid Fd on failure, errno set.
Fd accept_connection(int listen_fd) noexcept;

}  // namespace space::guest
