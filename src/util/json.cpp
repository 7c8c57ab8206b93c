// JSON parser and serializer; see json.h. The parser is a recursive descent over a string_view
// with an explicit depth counter; it never reads past the end of its input.
#include "util/json.h"

#include <charconv>
#include <cmath>

#include "util/error.h"

namespace space::json {

namespace {

// Length (1-4) of the well-formed UTF-8 sequence starting at s[pos], or 0 if it is malformed
// (bad lead byte, truncated, overlong, surrogate or above U+10FFFF).
size_t utf8_len(std::string_view s, size_t pos) {
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
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;                          // surrogate
  if (cp > 0x10FFFF) return 0;
  return n;
}

void append_utf8(std::string& out, uint32_t cp) {
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
    fail("invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(col) +
         ": " + why);
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
      case '{': return object();
      case '[': return array();
      case '"': return Value(string());
      case 't': expect_word("true"); return Value(true);
      case 'f': expect_word("false"); return Value(false);
      case 'n': expect_word("null"); return Value(nullptr);
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
      Value v = value();
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
      if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
      else fail_at("invalid hex digit in \\u escape", pos_ - 1);
    }
    return v;
  }

  std::string string() {
    size_t start = pos_;
    pos_++;  // '"'
    std::string out;
    for (;;) {
      if (eof()) fail_at("unterminated string", start);
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        pos_++;
        return out;
      }
      if (c < 0x20) fail_at("control character in string");
      if (c == '\\') {
        size_t esc_at = pos_;
        pos_++;
        if (eof()) fail_at("unterminated string", start);
        char e = s_[pos_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
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
          default: fail_at("invalid escape sequence", esc_at);
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

void write_string(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t n = utf8_len(s, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD for each invalid byte
        i++;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    i++;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 0xF];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void write_double(std::string& out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string_view txt(buf, static_cast<size_t>(r.ptr - buf));
  out += txt;
  // Keep it a double when read back.
  if (txt.find_first_of(".eE") == std::string_view::npos) out += ".0";
}

void write_value(std::string& out, const Value& v, int indent, int level) {
  auto newline = [&](int lvl) {
    if (indent == 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * lvl), ' ');
  };
  switch (v.kind()) {
    case Kind::Null: out += "null"; break;
    case Kind::Bool: out += v.as_bool() ? "true" : "false"; break;
    case Kind::Int: out += std::to_string(v.as_int()); break;
    case Kind::Double: write_double(out, v.as_double()); break;
    case Kind::String: write_string(out, v.as_string()); break;
    case Kind::Array: {
      const auto& a = v.as_array();
      out += '[';
      for (size_t i = 0; i < a.size(); i++) {
        if (i) out += ',';
        newline(level + 1);
        write_value(out, a[i], indent, level + 1);
      }
      if (!a.empty()) newline(level);
      out += ']';
      break;
    }
    case Kind::Object: {
      const auto& o = v.as_object();
      out += '{';
      for (size_t i = 0; i < o.size(); i++) {
        if (i) out += ',';
        newline(level + 1);
        write_string(out, o[i].first);
        out += indent ? ": " : ":";
        write_value(out, o[i].second, indent, level + 1);
      }
      if (!o.empty()) newline(level);
      out += '}';
      break;
    }
  }
}

[[noreturn]] void wrong_kind(Kind want, Kind got) {
  fail(std::string("JSON value is ") + kind_name(got) + ", expected " + kind_name(want));
}

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Null: return "null";
    case Kind::Bool: return "a boolean";
    case Kind::Int: return "an integer";
    case Kind::Double: return "a number";
    case Kind::String: return "a string";
    case Kind::Array: return "an array";
    case Kind::Object: return "an object";
  }
  return "a value";
}

bool Value::as_bool() const {
  if (!is_bool()) wrong_kind(Kind::Bool, kind());
  return std::get<bool>(v_);
}

int64_t Value::as_int() const {
  if (!is_int()) wrong_kind(Kind::Int, kind());
  return std::get<int64_t>(v_);
}

double Value::as_double() const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(v_));
  if (kind() != Kind::Double) wrong_kind(Kind::Double, kind());
  return std::get<double>(v_);
}

const std::string& Value::as_string() const {
  if (!is_string()) wrong_kind(Kind::String, kind());
  return std::get<std::string>(v_);
}

const Array& Value::as_array() const {
  if (!is_array()) wrong_kind(Kind::Array, kind());
  return std::get<Array>(v_);
}

Array& Value::as_array() {
  if (!is_array()) wrong_kind(Kind::Array, kind());
  return std::get<Array>(v_);
}

const Object& Value::as_object() const {
  if (!is_object()) wrong_kind(Kind::Object, kind());
  return std::get<Object>(v_);
}

Object& Value::as_object() {
  if (!is_object()) wrong_kind(Kind::Object, kind());
  return std::get<Object>(v_);
}

const Value* Value::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (auto& m : std::get<Object>(v_))
    if (m.first == key) return &m.second;
  return nullptr;
}

const Value& Value::at(std::string_view key) const {
  const Value* v = find(key);
  if (!v) fail("JSON object has no member \"" + std::string(key) + "\"");
  return *v;
}

Value& Value::set(std::string key, Value v) {
  if (is_null()) v_ = Object{};
  auto& obj = as_object();
  for (auto& m : obj) {
    if (m.first == key) {
      m.second = std::move(v);
      return m.second;
    }
  }
  obj.emplace_back(std::move(key), std::move(v));
  return obj.back().second;
}

Value& Value::push_back(Value v) {
  if (is_null()) v_ = Array{};
  auto& arr = as_array();
  arr.push_back(std::move(v));
  return arr.back();
}

namespace {

const Value* member(const Value& obj, std::string_view key, bool required) {
  if (!obj.is_object()) fail(std::string("expected a JSON object, found ") + kind_name(obj.kind()));
  const Value* v = obj.find(key);
  if (v && v->is_null()) v = nullptr;
  if (!v && required) fail("field \"" + std::string(key) + "\" is missing");
  return v;
}

[[noreturn]] void bad_field(std::string_view key, const std::string& why) {
  fail("field \"" + std::string(key) + "\": " + why);
}

std::string as_string_field(const Value& v, std::string_view key) {
  if (!v.is_string()) bad_field(key, std::string("expected a string, found ") + kind_name(v.kind()));
  return v.as_string();
}

uint64_t as_uint_field(const Value& v, std::string_view key, uint64_t max) {
  if (!v.is_int()) bad_field(key, std::string("expected an integer, found ") + kind_name(v.kind()));
  int64_t i = v.as_int();
  if (i < 0 || static_cast<uint64_t>(i) > max)
    bad_field(key, std::to_string(i) + " is out of range 0.." + std::to_string(max));
  return static_cast<uint64_t>(i);
}

}  // namespace

std::string string_field(const Value& obj, std::string_view key) {
  return as_string_field(*member(obj, key, true), key);
}

std::string string_field_or(const Value& obj, std::string_view key, std::string dflt) {
  const Value* v = member(obj, key, false);
  return v ? as_string_field(*v, key) : dflt;
}

uint64_t uint_field(const Value& obj, std::string_view key, uint64_t max) {
  return as_uint_field(*member(obj, key, true), key, max);
}

uint64_t uint_field_or(const Value& obj, std::string_view key, uint64_t max, uint64_t dflt) {
  const Value* v = member(obj, key, false);
  return v ? as_uint_field(*v, key, max) : dflt;
}

Value parse(std::string_view text, const ParseOptions& opts) {
  return Parser(text, opts).document();
}

void save_file(const std::string& path, const Value& v, mode_t mode, fs::Sync sync) {
  fs::write_file_atomic(path, serialize(v, 2) + "\n", mode, sync);
}

std::string serialize(const Value& v, int indent) {
  std::string out;
  write_value(out, v, indent < 0 ? 0 : indent, 0);
  return out;
}

}  // namespace space::json
