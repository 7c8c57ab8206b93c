// Credential message codecs; see cred.h. Encoders trust their caller; decoders trust nothing.
#include "proto/cred.h"

namespace space::proto {

bool valid_secret_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxSecretName) return false;
  if (name[0] == '.' || name[0] == '-') return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::vector<uint8_t> CredGet::encode() const {
  Writer w;
  w.str(name);
  return std::move(w.buffer());
}

CredGet CredGet::decode(std::span<const uint8_t> p) {
  Reader r(p);
  CredGet g;
  g.name = r.str();
  r.finish();
  if (!valid_secret_name(g.name)) throw ProtoError("invalid secret name");
  return g;
}

std::vector<uint8_t> CredValue::encode() const {
  Writer w;
  w.bytes(value);
  return std::move(w.buffer());
}

CredValue CredValue::decode(std::span<const uint8_t> p) {
  Reader r(p);
  auto b = r.bytes();
  r.finish();
  if (b.size() > kMaxSecretSize) throw ProtoError("secret value too large");
  return CredValue{{b.begin(), b.end()}};
}

std::vector<uint8_t> CredDenied::encode() const {
  Writer w;
  w.u32(static_cast<uint32_t>(code));
  w.str(message.size() > kMaxDenyMessage ? message.substr(0, kMaxDenyMessage) : message);
  return std::move(w.buffer());
}

CredDenied CredDenied::decode(std::span<const uint8_t> p) {
  Reader r(p);
  CredDenied d;
  uint32_t code = r.u32();
  d.message = r.str();
  r.finish();
  if (code < 1 || code > static_cast<uint32_t>(DenyCode::Internal))
    throw ProtoError("unknown denial code");
  if (d.message.size() > kMaxDenyMessage) throw ProtoError("denial message too long");
  if (d.message.find('\0') != std::string::npos) throw ProtoError("denial message has a NUL");
  d.code = static_cast<DenyCode>(code);
  return d;
}

}  // namespace space::proto
