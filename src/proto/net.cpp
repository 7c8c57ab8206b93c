// Egress message codecs; see net.h. Encoders trust their caller; decoders trust nothing.
#include "proto/net.h"

namespace space::proto {

namespace {
bool printable(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x21 || c > 0x7e) return false;
  return true;
}
}  // namespace

void NetConnect::check() const {
  if (host.empty() || host.size() > kMaxNetHost || !printable(host))
    throw ProtoError("invalid host in a connection request");
  if (port == 0) throw ProtoError("port 0 in a connection request");
}

std::vector<uint8_t> NetConnect::encode() const {
  return encode_fields(*this);
}

NetConnect NetConnect::decode(std::span<const uint8_t> p) {
  return decode_fields<NetConnect>(p);
}

void ForwardRequest::check() const {
  if (port == 0) throw ProtoError("port 0 in a forward request");
}

std::vector<uint8_t> ForwardRequest::encode() const {
  return encode_fields(*this);
}

ForwardRequest ForwardRequest::decode(std::span<const uint8_t> p) {
  return decode_fields<ForwardRequest>(p);
}

void NetResult::check() const {
  switch (status) {
    case kNetOk:
    case 400:
    case 403:
    case 502:
    case 503:
    case 504:
      return;
    default:
      throw ProtoError("unknown status in a connection result");
  }
}

std::vector<uint8_t> NetResult::encode() const {
  return encode_fields(*this);
}

NetResult NetResult::decode(std::span<const uint8_t> p) {
  return decode_fields<NetResult>(p);
}

}  // namespace space::proto
