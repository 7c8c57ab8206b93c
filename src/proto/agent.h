// The host <-> guest-init agent protocol, shared verbatim by the host (src/core) and guest-init.
// Transport: one vsock stream per conversation; the host dials guest port kAgentPort.
// Framing: an 8-byte header {u32 payload length, u16 type, u16 reserved=0}, little-endian, then
// the payload. Payloads are at most kMaxPayload bytes. Every conversation opens with Hello from
// the host and HelloReply from the guest; a peer of another major version is refused with Error.
// FrameDecoder is incremental (feed bytes, pull frames) and rejects malformed input with
// ProtoError before allocating anything large, so it is safe on hostile bytes.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "proto/wire.h"

namespace space::proto {

constexpr uint32_t kAgentPort = 1024;       // guest-init listens here
constexpr uint32_t kCredentialPort = 1025;  // guest dials the host here for secrets
constexpr uint32_t kVersion = 1;            // bumped on any incompatible change
constexpr uint32_t kMaxPayload = 1u << 20;  // 1 MiB
constexpr size_t kHeaderSize = 8;

enum class Type : uint16_t {
  Hello = 1,       // host -> guest: Hello
  HelloReply = 2,  // guest -> host: HelloReply
  Error = 3,       // either way: ErrorMsg; the sender then closes
  Poweroff = 4,    // host -> guest: empty; guest syncs, unmounts and resets the VM
  Ack = 5,         // guest -> host: empty; the request was accepted
};

struct Frame {
  Type type{};
  std::vector<uint8_t> payload;
};

// Header + payload bytes for one frame. Throws ProtoError if the payload is too large.
std::vector<uint8_t> encode_frame(Type type, std::span<const uint8_t> payload);

class FrameDecoder {
 public:
  // Appends received bytes. Throws ProtoError on a bad header (oversized or reserved != 0).
  void feed(std::span<const uint8_t> data);
  // The next complete frame, if one has arrived.
  std::optional<Frame> next();
  // Bytes buffered but not yet returned as frames.
  size_t buffered() const { return buf_.size(); }

 private:
  void check_header() const;
  std::vector<uint8_t> buf_;
};

struct Hello {
  uint32_t version = kVersion;
  std::string client;  // e.g. "space 0.1.0"
  std::vector<uint8_t> encode() const;
  static Hello decode(std::span<const uint8_t> p);
};

struct HelloReply {
  uint32_t version = kVersion;
  std::string agent;     // e.g. "guest-init 0.1.0"
  std::string hostname;  // the sandbox id the guest took as its hostname
  uint64_t uptime_ms = 0;
  std::vector<uint8_t> encode() const;
  static HelloReply decode(std::span<const uint8_t> p);
};

struct ErrorMsg {
  std::string message;
  std::vector<uint8_t> encode() const;
  static ErrorMsg decode(std::span<const uint8_t> p);
};

}  // namespace space::proto
