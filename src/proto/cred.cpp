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

void CredGet::check() const {
  if (!valid_secret_name(name)) throw ProtoError("invalid secret name");
}

void CredDenied::check() const {
  if (code < DenyCode::NotGranted || code > DenyCode::Internal)
    throw ProtoError("unknown denial code");
  if (message.find('\0') != std::string::npos) throw ProtoError("denial message has a NUL");
}

}  // namespace space::proto
