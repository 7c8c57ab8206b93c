// Base64 (RFC 4648, with padding) for secret values, which are arbitrary bytes but travel and
// rest inside JSON strings (secrets.json, the credential helper's operator socket). The decoder is
// strict: only the standard alphabet, correct padding, no whitespace.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace space::base64 {

// The encoding of `bytes`, in a string reserved to its exact size (never reallocated).
std::string encode(std::string_view bytes);
// Appends the encoding of `bytes` to `out` (a std::string or a SecretBytes); the caller reserves
// room (encoded_size) first when `out` holds a secret, so that it is not reallocated.
template <class String>
void encode_into(String& out, std::string_view bytes);
// The length of the encoding of `n` bytes.
constexpr size_t encoded_size(size_t n) {
  return (n + 2) / 3 * 4;
}
// The bytes, or nullopt if `text` is not canonical base64.
std::optional<std::string> decode(std::string_view text);
// Appends the bytes `text` encodes to `out` (a std::string or a SecretBytes, reserved up front
// so that it is not reallocated); false, and `out` as it was, if `text` is not canonical base64.
template <class String>
bool decode_into(String& out, std::string_view text);

}  // namespace space::base64
