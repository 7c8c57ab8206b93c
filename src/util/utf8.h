// UTF-8 helpers shared by the JSON parser and serializer (util/json_parse.cpp, json_write.cpp):
// the length of a well-formed sequence, and the encoding of a code point; and printable(), which
// makes text from a guest or a file safe to print on the operator's terminal.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace space::utf8 {

// Length (1-4) of the well-formed UTF-8 sequence starting at s[pos], or 0 if it is malformed
// (bad lead byte, truncated, overlong, surrogate or above U+10FFFF).
inline size_t utf8_len(std::string_view s, size_t pos) {
  auto b = [&](size_t i) { return static_cast<unsigned char>(s[pos + i]); };
  unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (pos + n > s.size()) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((b(i) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0;  // overlong
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;                        // surrogate
  if (cp > 0x10FFFF) return 0;
  return n;
}

template <class String>  // std::string, or SecretBytes
inline void append_utf8(String& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// `s` with every byte a terminal could act on written as \xNN: C0 controls other than newline
// and tab (ESC starts the sequences that move the cursor, retitle the window or write to the
// clipboard), DEL, the C1 controls U+0080..U+009F, and bytes that are not well-formed UTF-8.
// Text we print that a guest, an image or a network peer wrote goes through it.
inline std::string printable(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = utf8_len(s, i);
    if (n == 0 || (n == 1 && ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)) ||
        (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0)) {
      escape(c);
      i++;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace space::utf8
