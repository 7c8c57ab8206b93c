// Host side of a conversation with guest-init. The host reaches a guest vsock port through the
// VMM's vsock.sock with Firecracker's convention: connect, write "CONNECT <port>\n", read
// "OK <host port>\n"; then agent frames (proto/agent.h) flow both ways. While the guest boots
// nobody listens yet and the VMM closes the connection: vsock_dial reports that as an Error with
// errno ECONNRESET, which callers waiting for boot retry.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "proto/agent.h"
#include "util/fd.h"
#include "util/socket.h"

namespace space::agent {

// A stream to guest vsock `port`. Throws Error (ECONNRESET when the guest did not accept).
Fd vsock_dial(const std::string& vsock_sock, uint32_t port, const net::Deadline& dl);
// Writes one frame.
void write_frame(int fd, proto::Type type, std::span<const uint8_t> payload,
                 const net::Deadline& dl);
// Reads one whole frame; nullopt on EOF at a frame boundary. Throws on a malformed header.
std::optional<proto::Frame> read_frame(int fd, const net::Deadline& dl);
// Hello / HelloReply handshake on a fresh connection. Throws if the guest answers with an Error
// frame, another protocol version, or anything else.
// `flags` are proto::Hello flags (kImage: the sandbox has an image for guest-init to mount).
proto::HelloReply agent_hello(int fd, const net::Deadline& dl, uint32_t flags = 0);
// A Hello carrying 32 bytes of fresh getrandom() entropy and the host's CLOCK_REALTIME, which
// guest-init mixes into its RNG and uses to correct its clock, and `sandbox`, the id it takes as
// its hostname ("" = keep the hostname; see proto/agent.h), with `flags`.
proto::Hello make_hello(const std::string& sandbox = "", uint32_t flags = 0);
// Reads and checks the HelloReply to a Hello already sent (for callers that pipeline a request
// behind their Hello). Throws like agent_hello.
proto::HelloReply read_hello_reply(int fd, const net::Deadline& dl);

}  // namespace space::agent
