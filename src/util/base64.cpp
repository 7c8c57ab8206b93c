// Base64 codec; see base64.h.
#include "util/base64.h"

#include <cstdint>

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

std::string encode(std::string_view in) {
  std::string out;
  out.reserve(encoded_size(in.size()));
  encode_into(out, in);
  return out;
}

void encode_into(std::string& out, std::string_view in) {
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v =
        uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  size_t rest = in.size() - i;
  if (rest) {
    uint32_t v =
        uint32_t(uint8_t(in[i])) << 16 | (rest == 2 ? uint32_t(uint8_t(in[i + 1])) << 8 : 0);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
}

std::optional<std::string> decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    bool last = i + 4 == in.size();
    int pad = last ? (in[i + 3] == '=') + (in[i + 2] == '=') : 0;
    if (pad == 1 && in[i + 2] == '=') return std::nullopt;  // "x=y=" style
    int v[4];
    for (int k = 0; k < 4 - pad; k++)
      if ((v[k] = value_of(in[i + k])) < 0) return std::nullopt;
    for (int k = 4 - pad; k < 4; k++) v[k] = 0;
    uint32_t n = uint32_t(v[0]) << 18 | uint32_t(v[1]) << 12 | uint32_t(v[2]) << 6 | uint32_t(v[3]);
    // Canonical: the bits a padded group does not carry must be zero.
    if ((pad == 1 && (n & 0xff)) || (pad == 2 && (n & 0xffff))) return std::nullopt;
    out += char(n >> 16);
    if (pad < 2) out += char((n >> 8) & 0xff);
    if (pad < 1) out += char(n & 0xff);
  }
  return out;
}

}  // namespace space::base64
