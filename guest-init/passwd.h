// Pure /etc/passwd and /etc/group lookups, header-only (small functions).
// Used when an exec names a user: by uid, its passwd entry (if any) gives the primary gid, HOME
// and USER; by name (`-u app:staff`, or an image's User), the entry must exist. The files read
// are those of the exec's root (an image's own, for a sandbox with one).
// passwd lines are name:password:uid:gid:gecos:home:shell, group lines name:password:gid:members;
// malformed lines are skipped.
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

// Splits the text of a colon-separated file into its lines' fields; calls `each(fields, n)` for
// every line with at least `min` fields (at most 7 are split off) until it returns true.
template <class F>
inline void each_entry(std::string_view text, size_t min, F each) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    std::string_view f[7];
    size_t n = 0;
    for (; n < 7; n++) {
      size_t c = line.find(':');
      f[n] = line.substr(0, c);
      if (c == std::string_view::npos) {
        n++;
        break;
      }
      line = line.substr(c + 1);
    }
    if (n >= min && each(f, n)) return;
  }
}

// The first entry of `passwd` (the file's text) with this uid, or (by_name) this name.
inline std::optional<PasswdEntry> find_passwd(std::string_view passwd, std::string_view name,
                                              uint32_t uid, bool by_name) {
  std::optional<PasswdEntry> out;
  each_entry(passwd, 7, [&](const std::string_view* f, size_t) {
    auto u = parse_id(f[2]);
    auto g = parse_id(f[3]);
    if (!u || !g || (by_name ? f[0] != name : *u != uid)) return false;
    out = PasswdEntry{std::string(f[0]), std::string(f[5]), *u, *g};
    return true;
  });
  return out;
}

inline std::optional<PasswdEntry> find_passwd_uid(std::string_view passwd, uint32_t uid) {
  return find_passwd(passwd, {}, uid, false);
}

inline std::optional<PasswdEntry> find_passwd_name(std::string_view passwd, std::string_view name) {
  return find_passwd(passwd, name, 0, true);
}

// The gid of group `name` in `group` (the file's text).
inline std::optional<uint32_t> find_group_gid(std::string_view group, std::string_view name) {
  std::optional<uint32_t> out;
  each_entry(group, 3, [&](const std::string_view* f, size_t) {
    if (f[0] != name) return false;
    out = parse_id(f[2]);
    return out.has_value();
  });
  return out;
}

// "USER[:GROUP]", each a name or a number, resolved against passwd and group texts.
struct ResolvedUser {
  uint32_t uid = 0, gid = 0;
  std::optional<PasswdEntry> pw;  // the user's entry, when there is one
  std::string error;              // why it cannot be resolved ("" = resolved)
};

inline ResolvedUser resolve_user(std::string_view spec, std::string_view passwd,
                                 std::string_view group) {
  ResolvedUser r;
  size_t colon = spec.find(':');
  std::string_view user = spec.substr(0, colon);
  std::optional<std::string_view> grp;
  if (colon != std::string_view::npos) grp = spec.substr(colon + 1);
  if (auto uid = parse_id(user)) {
    r.uid = *uid;
    r.pw = find_passwd_uid(passwd, *uid);
  } else {
    r.pw = find_passwd_name(passwd, user);
    if (!r.pw) {
      r.error = "user " + std::string(user) + " is not in /etc/passwd";
      return r;
    }
    r.uid = r.pw->uid;
  }
  r.gid = r.pw ? r.pw->gid : r.uid;
  if (grp) {
    auto gid = parse_id(*grp);
    if (!gid) gid = find_group_gid(group, *grp);
    if (!gid) {
      r.error = "group " + std::string(*grp) + " is not in /etc/group";
      return r;
    }
    r.gid = *gid;
  }
  return r;
}

}  // namespace space::guest
