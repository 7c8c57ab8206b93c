// Base64 codec; see base64.h.
#include "util/base64.h"

#include <string.h>

#include <cstdint>

#include "util/secret_memory.h"

namespace space::base64 {

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int value_of(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}
}  // namespace

std::string encode(std::string_view bytes) {
  std::string out;
  out.reserve(encoded_size(bytes.size()));
  encode_into(out, bytes);
  return out;
}

template <class String>
void encode_into(String& out, std::string_view bytes) {
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 |
                 uint8_t(bytes[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest) {
    uint32_t v =
        uint32_t(uint8_t(bytes[i])) << 16 | (rest == 2 ? uint32_t(uint8_t(bytes[i + 1])) << 8 : 0);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
}

template <class String>
bool decode_into(String& out, std::string_view text) {
  if (text.size() % 4 != 0) return false;
  const size_t start = out.size();
  out.reserve(start + text.size() / 4 * 3);
  auto refuse = [&] {
    ::explicit_bzero(out.data() + start, out.size() - start);
    out.resize(start);
    return false;
  };
  for (size_t i = 0; i < text.size(); i += 4) {
    bool last = i + 4 == text.size();
    int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
    if (pad == 1 && text[i + 2] == '=') return refuse();  // "x=y=" style
    int v[4];
    for (int k = 0; k < 4 - pad; k++)
      if ((v[k] = value_of(text[i + k])) < 0) return refuse();
    for (int k = 4 - pad; k < 4; k++) v[k] = 0;
    uint32_t n = uint32_t(v[0]) << 18 | uint32_t(v[1]) << 12 | uint32_t(v[2]) << 6 | uint32_t(v[3]);
    // Canonical: the bits a padded group does not carry must be zero.
    if ((pad == 1 && (n & 0xff)) || (pad == 2 && (n & 0xffff))) return refuse();
    out += char(n >> 16);
    if (pad < 2) out += char((n >> 8) & 0xff);
    if (pad < 1) out += char(n & 0xff);
  }
  return true;
}

std::optional<std::string> decode(std::string_view text) {
  std::string out;
  if (!decode_into(out, text)) return std::nullopt;
  return out;
}

template void encode_into(std::string&, std::string_view);
template void encode_into(SecretBytes&, std::string_view);
template bool decode_into(std::string&, std::string_view);
template bool decode_into(SecretBytes&, std::string_view);

}  // namespace space::base64
