// Pure helpers for the kernel command line and sandbox ids, header-only (they are small and
// inline). Nothing here touches the system.
// The kernel splits /proc/cmdline on spaces; a value may be double-quoted ("a b") and a later
// occurrence of a parameter overrides an earlier one, as the kernel itself does.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace space::guest {

constexpr std::string_view kDefaultHostname = "space";
constexpr size_t kMaxIdLength = 64;

// True for `[a-z0-9][a-z0-9_.-]{0,63}`: the sandbox id grammar of the design.
inline bool valid_sandbox_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(id[0])) return false;
  for (char c : id.substr(1))
    if (!alnum(c) && c != '_' && c != '.' && c != '-') return false;
  return true;
}

// The value of the last `key=value` on the command line (quotes removed), or nullopt when the
// key is absent. A bare `key` (no '=') yields an empty value.
inline std::optional<std::string> cmdline_param(std::string_view cmdline, std::string_view key) {
  std::optional<std::string> found;
  size_t i = 0;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\0'; };
  while (i < cmdline.size()) {
    while (i < cmdline.size() && space(cmdline[i])) i++;
    if (i >= cmdline.size()) break;
    // One token: spaces inside double quotes do not end it; the quotes themselves are dropped.
    std::string tok;
    bool quoted = false;
    for (; i < cmdline.size() && (quoted || !space(cmdline[i])); i++) {
      if (cmdline[i] == '"')
        quoted = !quoted;
      else
        tok += cmdline[i];
    }
    std::string_view t(tok);
    if (t.substr(0, key.size()) != key) continue;
    if (t.size() == key.size())
      found = std::string();
    else if (t[key.size()] == '=')
      found = std::string(t.substr(key.size() + 1));
  }
  return found;
}

// The hostname guest-init takes: `space.id=<id>` if present and valid, else "space". When the
// parameter is present but invalid, `*warning` (if given) explains why it was ignored.
inline std::string hostname_from_cmdline(std::string_view cmdline, std::string* warning = nullptr) {
  auto id = cmdline_param(cmdline, "space.id");
  if (!id) return std::string(kDefaultHostname);
  if (!valid_sandbox_id(*id)) {
    if (warning)
      *warning =
          "ignoring invalid space.id '" + id->substr(0, 80) + "': want [a-z0-9][a-z0-9_.-]{0,63}";
    return std::string(kDefaultHostname);
  }
  return *id;
}

}  // namespace space::guest
