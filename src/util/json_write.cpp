// The JSON serializer; see json.h. Strings are escaped as RFC 8259 requires, invalid UTF-8
// becomes U+FFFD, and doubles keep a '.' or exponent so that they read back as doubles.
#include <charconv>
#include <cmath>

#include "util/json.h"
#include "util/utf8.h"

namespace space::json {

namespace {

using utf8::utf8_len;

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
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
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
    case Kind::Null:
      out += "null";
      break;
    case Kind::Bool:
      out += v.as_bool() ? "true" : "false";
      break;
    case Kind::Int:
      out += std::to_string(v.as_int());
      break;
    case Kind::Double:
      write_double(out, v.as_double());
      break;
    case Kind::String:
      write_string(out, v.as_string());
      break;
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

}  // namespace

void save_file(const std::string& path, const Value& v, mode_t mode, fs::Sync sync) {
  fs::write_file_atomic(path, serialize(v, 2) + "\n", mode, sync);
}

std::string quote(std::string_view s) {
  std::string out;
  write_string(out, s);
  return out;
}

std::string serialize(const Value& v, int indent) {
  std::string out;
  write_value(out, v, indent < 0 ? 0 : indent, 0);
  return out;
}

}  // namespace space::json
