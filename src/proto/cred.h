// Credential messages (frame types in agent.h), the only conversation on vsock port
// kCredentialPort. The guest dials the host there (guest-init for `exec --secret-env`, or the
// space-secret tool); the VMM forwards the stream, unread, to the credential helper's socket for
// this one sandbox. No Hello: the guest sends CredGet frames, one at a time, and gets CredValue
// or CredDenied for each, in order; either side may close at any time. The request carries only
// a name: which sandbox asks is known from the socket the helper accepted it on, never from the
// frame, so there is no field a guest could forge.
// Payload layouts, little-endian (str = u32 length + bytes):
//   CredGet     str name                (1..kMaxSecretName bytes of [A-Za-z0-9_.-])
//   CredValue   bytes value             (at most kMaxSecretSize bytes)
//   CredDenied  u32 code, str message   (code: DenyCode; message at most kMaxDenyMessage bytes)
// Decoders check every field and throw ProtoError on anything else; they never read outside the
// payload.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/fields.h"
#include "proto/wire.h"

namespace space::proto {

constexpr size_t kMaxSecretName = 128;
constexpr size_t kMaxSecretSize = 64 * 1024;
constexpr size_t kMaxDenyMessage = 1024;

// True if `name` is a valid secret name: 1..kMaxSecretName of [A-Za-z0-9_.-], not starting with
// '.' or '-'.
bool valid_secret_name(std::string_view name);

struct CredGet : FieldMessage<CredGet> {
  std::string name;
  SPACE_FIELDS(name);
  void check() const;
};

struct CredValue : FieldMessage<CredValue> {
  std::vector<uint8_t> value;
  SPACE_FIELDS((value, Max{kMaxSecretSize}));
};

enum class DenyCode : uint32_t {
  NotGranted = 1,    // no grant of this name to this sandbox (or it was revoked)
  Expired = 2,       // the grant's ttl has passed
  UsedUp = 3,        // the grant's uses are spent
  NoSuchSecret = 4,  // granted, but the operator removed the secret
  NotAllowed = 5,    // the connection is not from this sandbox's VMM
  BadRequest = 6,    // malformed frame
  Internal = 7,      // the helper failed (store unreadable, ...)
};

struct CredDenied : FieldMessage<CredDenied> {
  DenyCode code = DenyCode::NotGranted;
  std::string message;
  SPACE_FIELDS(code, (message, Cut{kMaxDenyMessage}));
  void check() const;
};

}  // namespace space::proto
