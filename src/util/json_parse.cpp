// The JSON parser; see json.h. A recursive descent over a string_view with an explicit depth
// counter; it never reads past the end of its input.
#include <algorithm>
#include <charconv>

#include "util/error.h"
#include "util/json.h"
#include "util/utf8.h"

namespace space::json {

namespace {

using utf8::append_utf8;
using utf8::utf8_len;

class Parser {
 public:
  Parser(std::string_view s, const ParseOptions& o) : s_(s), opts_(o) {}

  Value document() {
    ws();
    Value v = value();
    ws();
    if (pos_ != s_.size()) fail_at("unexpected data after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail_at(const std::string& why) { fail_at(why, pos_); }
  [[noreturn]] void fail_at(const std::string& why, size_t at) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); i++) {
      if (s_[i] == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    fail("invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(col) + ": " +
         why);
  }

  bool eof() const { return pos_ >= s_.size(); }
  char peek() const { return eof() ? '\0' : s_[pos_]; }

  void ws() {
    while (!eof() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      pos_++;
  }

  void expect_word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) fail_at("invalid literal");
    pos_ += w.size();
  }

  Value value() {
    if (eof()) fail_at("unexpected end of input");
    switch (s_[pos_]) {
      case '{':
        return object();
      case '[':
        return array();
      case '"':
        return Value(string());
      case 't':
        expect_word("true");
        return Value(true);
      case 'f':
        expect_word("false");
        return Value(false);
      case 'n':
        expect_word("null");
        return Value(nullptr);
      default:
        if (s_[pos_] == '-' || (s_[pos_] >= '0' && s_[pos_] <= '9')) return number();
        fail_at(std::string("unexpected character '") + s_[pos_] + "'");
    }
  }

  void enter() {
    if (++depth_ > opts_.max_depth)
      fail_at("nesting deeper than " + std::to_string(opts_.max_depth) + " levels");
  }

  Value object() {
    enter();
    pos_++;  // '{'
    Object obj;
    ws();
    if (peek() == '}') {
      pos_++;
      depth_--;
      return Value(std::move(obj));
    }
    for (;;) {
      ws();
      if (peek() != '"') fail_at("expected a string key");
      size_t key_at = pos_;
      std::string key = string();
      for (auto& m : obj)
        if (m.first == key) fail_at("duplicate key \"" + key + "\"", key_at);
      ws();
      if (peek() != ':') fail_at("expected ':' after an object key");
      pos_++;
      ws();
      Value v = is_secret(key) ? secret_value() : value();
      obj.emplace_back(std::move(key), std::move(v));
      ws();
      if (peek() == ',') {
        pos_++;
        continue;
      }
      if (peek() == '}') {
        pos_++;
        break;
      }
      fail_at(eof() ? "unexpected end of input in an object" : "expected ',' or '}'");
    }
    depth_--;
    return Value(std::move(obj));
  }

  bool is_secret(const std::string& key) const {
    if (!opts_.secrets) return false;
    for (const auto& k : opts_.secrets->keys)
      if (k == key) return true;
    return false;
  }

  // A secret member's value: decoded into a new SecretMembers::found entry; the tree gets its
  // index.
  Value secret_value() {
    if (peek() != '"') fail_at("expected a string");
    SecretString v;
    v.bytes.reserve(kSecretMinCapacity);  // in secret memory from its first byte
    string_into(v.bytes);
    opts_.secrets->found.push_back(std::move(v));
    return Value(opts_.secrets->found.size() - 1);
  }

  Value array() {
    enter();
    pos_++;  // '['
    Array arr;
    ws();
    if (peek() == ']') {
      pos_++;
      depth_--;
      return Value(std::move(arr));
    }
    for (;;) {
      ws();
      arr.push_back(value());
      ws();
      if (peek() == ',') {
        pos_++;
        continue;
      }
      if (peek() == ']') {
        pos_++;
        break;
      }
      fail_at(eof() ? "unexpected end of input in an array" : "expected ',' or ']'");
    }
    depth_--;
    return Value(std::move(arr));
  }

  uint32_t hex4() {
    if (pos_ + 4 > s_.size()) fail_at("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
      char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<uint32_t>(c - 'A' + 10);
      else
        fail_at("invalid hex digit in \\u escape", pos_ - 1);
    }
    return v;
  }

  std::string string() {
    std::string out;
    string_into(out);
    return out;
  }

  // Decodes the string literal at pos_ into `out`, which is reserved up front to the literal's
  // length (a decoded string is never longer), so it is never reallocated: no partial copy of a
  // secret is left in a freed block.
  template <class String>  // std::string, or SecretBytes
  void string_into(String& out) {
    size_t start = pos_;
    pos_++;  // '"'
    size_t end = pos_;
    while (end < s_.size() && s_[end] != '"') end += s_[end] == '\\' ? 2 : 1;
    out.reserve(std::min(end, s_.size()) - pos_);
    for (;;) {
      if (eof()) fail_at("unterminated string", start);
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        pos_++;
        return;
      }
      if (c < 0x20) fail_at("control character in string");
      if (c == '\\') {
        size_t esc_at = pos_;
        pos_++;
        if (eof()) fail_at("unterminated string", start);
        char e = s_[pos_++];
        switch (e) {
          case '"':
            out += '"';
            break;
          case '\\':
            out += '\\';
            break;
          case '/':
            out += '/';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'n':
            out += '\n';
            break;
          case 'r':
            out += '\r';
            break;
          case 't':
            out += '\t';
            break;
          case 'u': {
            uint32_t cp = hex4();
            if (cp >= 0xDC00 && cp <= 0xDFFF) fail_at("lone low surrogate in \\u escape", esc_at);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              if (s_.substr(pos_, 2) != "\\u") fail_at("lone high surrogate in \\u escape", esc_at);
              pos_ += 2;
              uint32_t lo = hex4();
              if (lo < 0xDC00 || lo > 0xDFFF) fail_at("invalid surrogate pair", esc_at);
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            append_utf8(out, cp);
            break;
          }
          default:
            fail_at("invalid escape sequence", esc_at);
        }
        continue;
      }
      size_t n = utf8_len(s_, pos_);
      if (n == 0) fail_at("invalid UTF-8 in string");
      out.append(s_.substr(pos_, n));
      pos_ += n;
    }
  }

  Value number() {
    size_t start = pos_;
    bool integral = true;
    if (peek() == '-') pos_++;
    auto digits = [&] {
      size_t d = pos_;
      while (!eof() && s_[pos_] >= '0' && s_[pos_] <= '9') pos_++;
      return pos_ - d;
    };
    if (peek() == '0') {
      pos_++;
      if (peek() >= '0' && peek() <= '9') fail_at("leading zero in number", start);
    } else if (digits() == 0) {
      fail_at("expected a digit", pos_);
    }
    if (peek() == '.') {
      integral = false;
      pos_++;
      if (digits() == 0) fail_at("expected a digit after '.'");
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      pos_++;
      if (peek() == '+' || peek() == '-') pos_++;
      if (digits() == 0) fail_at("expected a digit in the exponent");
    }
    const char* b = s_.data() + start;
    const char* e = s_.data() + pos_;
    if (integral) {
      int64_t i;
      auto r = std::from_chars(b, e, i);
      if (r.ec == std::errc() && r.ptr == e) return Value(i);
      // Too large for int64: fall through to a double.
    }
    double d;
    auto r = std::from_chars(b, e, d);
    if (r.ec != std::errc() || r.ptr != e) fail_at("number out of range", start);
    return Value(d);
  }

  std::string_view s_;
  ParseOptions opts_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Value parse(std::string_view text, const ParseOptions& opts) {
  return Parser(text, opts).document();
}

}  // namespace space::json
