// virtio-vsock wire format and the host-side handshake text. The packet header is the 44-byte
// little-endian struct virtio_vsock_hdr (virtio 1.x "Socket Device"); only stream sockets are
// supported. The Unix-socket handshake follows Firecracker's convention: a host client writes
// "CONNECT <port>\n" and reads back "OK <host port>\n". The parser is a free function so tests
// and fuzzers can drive it: at most kMaxConnectLine bytes, exactly one space, digits only, port
// in 1..0xfffffffe.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace space::devices::vsock {

constexpr uint64_t kHostCid = 2;
constexpr uint16_t kTypeStream = 1;
enum Op : uint16_t {
  kOpInvalid = 0,
  kOpRequest = 1,
  kOpResponse = 2,
  kOpRst = 3,
  kOpShutdown = 4,
  kOpRw = 5,
  kOpCreditUpdate = 6,
  kOpCreditRequest = 7,
};
// SHUTDOWN flags, from the sender's point of view.
constexpr uint32_t kShutdownRcv = 1;   // the sender will receive no more data
constexpr uint32_t kShutdownSend = 2;  // the sender will send no more data
constexpr uint32_t kEventTransportReset = 0;

constexpr size_t kHeaderSize = 44;
constexpr uint32_t kMaxPayload = 64 * 1024;  // largest RW payload accepted or produced
constexpr size_t kMaxConnectLine = 32;       // including the '\n'

struct Header {
  uint64_t src_cid = 0;
  uint64_t dst_cid = 0;
  uint32_t src_port = 0;
  uint32_t dst_port = 0;
  uint32_t len = 0;
  uint16_t type = 0;
  uint16_t op = 0;
  uint32_t flags = 0;
  uint32_t buf_alloc = 0;
  uint32_t fwd_cnt = 0;
};

// Decodes the first kHeaderSize bytes of `in`; false if `in` is shorter.
bool decode_header(std::span<const uint8_t> in, Header& out);
// Encodes `h` as the 44 wire bytes.
std::array<uint8_t, kHeaderSize> encode_header(const Header& h);
// Parses one handshake line without its '\n' ("CONNECT 1024"); nullopt when malformed.
std::optional<uint32_t> parse_connect_line(std::string_view line);
// The reply to a successful handshake: "OK <host_port>\n".
std::string format_ok_line(uint32_t host_port);
// Bytes the peer can still accept: its buf_alloc minus what is in flight (never negative).
uint32_t peer_credit(uint32_t peer_buf_alloc, uint32_t peer_fwd_cnt, uint32_t sent_cnt);

}  // namespace space::devices::vsock
