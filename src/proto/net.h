// Egress messages (frame types in agent.h), the only conversation on vsock port kEgressPort.
// guest-init's HTTP proxy dials the host there once per client connection; the VMM forwards the
// stream, unread, to the network broker's socket for this one sandbox. No Hello: the guest sends
// one NetConnect naming where it wants to go, the broker answers one NetResult, and when that
// says ok the connection carries the tunnelled bytes both ways, unframed, until either side
// closes. Which sandbox asks comes from the socket the broker accepted it on, never from a frame.
// Payload layouts, little-endian (str = u32 length + bytes):
//   NetConnect  str host, u16 port     (host: 1..kMaxNetHost bytes, a name or an address literal)
//   ForwardRequest u16 port            (space forward: host -> guest-init on port 1024, after
//   Hello) NetResult   u16 status, str address, str message
//               (status: kNetOk, or the HTTP status the proxy gives its client: 400, 403, 502,
//               503, 504; address: what was connected to, "ADDR:PORT"; message: why not, at
//               most kMaxNetMessage bytes)
// Decoders check every field and throw ProtoError on anything else.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "proto/fields.h"
#include "proto/wire.h"

namespace space::proto {

constexpr size_t kMaxNetHost = 255;
constexpr size_t kMaxNetMessage = 1024;
constexpr uint16_t kNetOk = 200;

struct NetConnect : FieldMessage<NetConnect> {
  std::string host;
  uint16_t port = 0;  // 1..65535
  SPACE_FIELDS(host, port);
  void check() const;
};

// Port forwarding in: the guest port to connect to on 127.0.0.1 (1..65535).
struct ForwardRequest : FieldMessage<ForwardRequest> {
  uint16_t port = 0;
  SPACE_FIELDS(port);
  void check() const;
};

struct NetResult : FieldMessage<NetResult> {
  uint16_t status = kNetOk;  // kNetOk, 400, 403, 502, 503 or 504
  std::string address;       // when ok: the address connected to
  std::string message;       // when refused: why, for the guest's client
  bool ok() const { return status == kNetOk; }
  SPACE_FIELDS(status, (address, Cut{kMaxNetHost}), (message, Cut{kMaxNetMessage}));
  void check() const;
};

}  // namespace space::proto
