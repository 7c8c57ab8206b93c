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

void ForwardRequest::check() const {
  if (port == 0) throw ProtoError("port 0 in a forward request");
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

}  // namespace space::proto
