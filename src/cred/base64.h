// Base64 (RFC 4648, with padding) for secret values, which are arbitrary bytes but travel and
// rest inside JSON strings (secrets.json, the operator socket). The decoder is strict: only the
// standard alphabet, correct padding, no whitespace.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace space::cred {

std::string base64_encode(std::string_view bytes);
// The bytes, or nullopt if `text` is not canonical base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace space::cred
