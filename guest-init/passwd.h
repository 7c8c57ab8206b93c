// Pure /etc/passwd lookup, header-only (one small function).
// Used when an exec names a uid: its passwd entry (if any) gives the primary gid, HOME and USER.
// Lines are name:password:uid:gid:gecos:home:shell; malformed lines are skipped.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace space::guest {

struct PasswdEntry {
  std::string name, home;
  uint32_t uid = 0, gid = 0;
};

// Parses a decimal id that fits in 32 bits; nullopt otherwise.
inline std::optional<uint32_t> parse_id(std::string_view s) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 0xffffffffu) return std::nullopt;
  return static_cast<uint32_t>(v);
}

// The first entry of `passwd` (the file's text) with this uid.
inline std::optional<PasswdEntry> find_passwd_uid(std::string_view passwd, uint32_t uid) {
  while (!passwd.empty()) {
    size_t nl = passwd.find('\n');
    std::string_view line = passwd.substr(0, nl);
    passwd = nl == std::string_view::npos ? std::string_view() : passwd.substr(nl + 1);
    std::string_view f[7];
    size_t n = 0;
    for (; n < 7; n++) {
      size_t c = line.find(':');
      f[n] = line.substr(0, c);
      if (c == std::string_view::npos) {
        line = {};
        n++;
        break;
      }
      line = line.substr(c + 1);
    }
    if (n < 7) continue;
    auto u = parse_id(f[2]);
    auto g = parse_id(f[3]);
    if (!u || !g || *u != uid) continue;
    return PasswdEntry{std::string(f[0]), std::string(f[5]), *u, *g};
  }
  return std::nullopt;
}

}  // namespace space::guest
