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

std::vector<uint8_t> NetConnect::encode() const {
  Writer w;
  w.str(host);
  w.u16(port);
  return std::move(w.buffer());
}

NetConnect NetConnect::decode(std::span<const uint8_t> p) {
  Reader r(p);
  NetConnect c;
  c.host = r.str();
  c.port = r.u16();
  r.finish();
  if (c.host.empty() || c.host.size() > kMaxNetHost || !printable(c.host))
    throw ProtoError("invalid host in a connection request");
  if (c.port == 0) throw ProtoError("port 0 in a connection request");
  return c;
}

std::vector<uint8_t> ForwardRequest::encode() const {
  Writer w;
  w.u16(port);
  return std::move(w.buffer());
}

ForwardRequest ForwardRequest::decode(std::span<const uint8_t> p) {
  Reader r(p);
  ForwardRequest f;
  f.port = r.u16();
  r.finish();
  if (f.port == 0) throw ProtoError("port 0 in a forward request");
  return f;
}

std::vector<uint8_t> NetResult::encode() const {
  Writer w;
  w.u16(status);
  w.str(address.size() > kMaxNetHost ? address.substr(0, kMaxNetHost) : address);
  w.str(message.size() > kMaxNetMessage ? message.substr(0, kMaxNetMessage) : message);
  return std::move(w.buffer());
}

NetResult NetResult::decode(std::span<const uint8_t> p) {
  Reader r(p);
  NetResult n;
  n.status = r.u16();
  n.address = r.str();
  n.message = r.str();
  r.finish();
  switch (n.status) {
    case kNetOk:
    case 400:
    case 403:
    case 502:
    case 503:
    case 504:
      break;
    default:
      throw ProtoError("unknown status in a connection result");
  }
  if (n.address.size() > kMaxNetHost || n.message.size() > kMaxNetMessage)
    throw ProtoError("oversized connection result");
  return n;
}

}  // namespace space::proto
