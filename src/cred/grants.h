// Grants: which sandbox may fetch which secret, until when and how many times. A grant is made
// from a spec "NAME[:ttl=DURATION][:uses=N]" (DURATION: a whole number with s, m, h or d, e.g.
// 30s, 10m, 2h, 1d; N >= 1). GrantTable is the helper's authoritative copy, saved as
// grants.json (0600, atomic) after every change: {"sandboxes":{"<id>":[{"name","granted_ms",
// "expires_ms"|null,"uses_left"|null,"expiry_logged"}]}}. A sandbox listed with no grants keeps
// its helper socket (a fetch then gets a clear "not granted"); destroy removes the entry. Times
// are milliseconds since the epoch and are passed in, so tests control the clock. Each grant
// also records the grantee's creation time ("sandbox_created"), so that a new sandbox that
// reuses a destroyed one's id never inherits a grant that destroy failed to revoke.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/json.h"

namespace space::cred {

struct GrantSpec {
  std::string name;
  std::optional<uint64_t> ttl_ms;
  std::optional<uint64_t> uses;
  // "HOST:PORT" (parse_inject_host): the grant binds the secret to these hosts; the sandbox gets
  // a placeholder, which the broker swaps for the value only in requests to them. Empty: the
  // sandbox gets the value itself.
  std::vector<std::string> inject;
};

// Parses "NAME[:ttl=DURATION][:uses=N]" (each option at most once). Throws Error with a hint.
GrantSpec parse_grant_spec(const std::string& spec);
// "HOST[:PORT]" as --inject takes it, normalized to "host:port" (lower case, port 443 when none;
// an IPv6 address in brackets). Throws Error with a hint on anything else.
std::string parse_inject_host(const std::string& text);
// Applies create/run's --inject NAME=HOST[,HOST...] to `specs`: NAME's spec (added when --secret
// did not name it) gets those hosts. Throws Error with a hint on a malformed flag.
void apply_inject_flag(std::vector<GrantSpec>& specs, const std::string& flag);
// Splits a normalized "host:port" into its parts.
std::pair<std::string, uint16_t> split_inject_host(const std::string& host_port);
// A new placeholder: "space-placeholder-" and 32 random hex digits (getrandom).
std::string new_placeholder();
// Parses "30s", "10m", "2h", "1d" (1..10 years' worth); milliseconds. Throws Error with a hint.
uint64_t parse_duration_ms(const std::string& text);
// "1h30m" style for messages and listings ("2s", "10m", "1d2h").
std::string format_duration_ms(uint64_t ms);

struct Grant {
  std::string name;
  std::string sandbox_created;  // the grantee's state.json "created" when granted: a later
                                // sandbox that reuses the id does not inherit the grant
  uint64_t granted_ms = 0;
  std::optional<uint64_t> expires_ms;  // none = until revoked
  std::optional<uint64_t> uses_left;   // none = unlimited
  bool expiry_logged = false;          // the audit log has its "expired" line
  std::vector<std::string> inject;     // bound to these "host:port"s; empty: not a binding
  std::string placeholder;             // what the sandbox gets instead of the value (bindings)
};

// Why a fetch is refused, if it is.
enum class Verdict { Allow, NotGranted, Expired, UsedUp };

class GrantTable {
 public:
  // Loads `path` (missing = empty). Throws Error naming the file on bad content.
  static GrantTable load(const std::string& path);
  // Writes `path` atomically with mode 0600.
  void save(const std::string& path) const;
  json::Value to_json() const;
  static GrantTable from_json(const json::Value& v);

  // Adds or replaces the grant of spec.name to `sandbox`, made when it was `created`. A binding
  // (spec.inject) keeps the placeholder of the grant it replaces, if that was one, else takes
  // `placeholder`.
  void grant(const std::string& sandbox, const GrantSpec& spec, uint64_t now_ms,
             const std::string& created = "", const std::string& placeholder = "");
  // The grant of `sandbox` whose placeholder is `token`, or nullptr.
  const Grant* find_placeholder(const std::string& sandbox, const std::string& token) const;
  // The grant of `name` to `sandbox`, or nullptr.
  const Grant* find(const std::string& sandbox, const std::string& name) const;
  // Removes the grant of `name`; false if there was none. The sandbox stays listed.
  bool revoke(const std::string& sandbox, const std::string& name);
  // Removes every grant of `sandbox` and returns their names; it stays listed unless `forget`.
  std::vector<std::string> revoke_all(const std::string& sandbox, bool forget);
  // What a fetch of `name` by `sandbox` at `now_ms` would get.
  Verdict check(const std::string& sandbox, const std::string& name, uint64_t now_ms) const;
  // check(), and on Allow spends one use. The caller saves before it sends the value.
  Verdict consume(const std::string& sandbox, const std::string& name, uint64_t now_ms);
  // Grants that have expired by `now_ms` and whose expiry is not logged yet; marks them logged.
  std::vector<std::pair<std::string, std::string>> newly_expired(uint64_t now_ms);
  // The earliest expiry still to be logged, if any.
  std::optional<uint64_t> next_expiry() const;
  // The sandboxes listed (with or without grants), sorted.
  std::vector<std::string> sandboxes() const;
  bool has_sandbox(const std::string& sandbox) const { return table_.count(sandbox) != 0; }
  // The grants of `sandbox` (empty if none).
  const std::vector<Grant>& grants_of(const std::string& sandbox) const;
  // Ensures `sandbox` is listed (for its socket).
  void add_sandbox(const std::string& sandbox) { table_[sandbox]; }

 private:
  Grant* find(const std::string& sandbox, const std::string& name);
  std::map<std::string, std::vector<Grant>> table_;
};

}  // namespace space::cred
