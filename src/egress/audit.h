// The network audit log of one sandbox: <root>/egress/audit/<id>.log, one JSON object per
// connection the guest asked for, written by the broker when the connection ends (or at once
// when it is refused): {"time", "sandbox", "host", "port", "address", "decision", "rule",
// "reason", "bytes_out", "bytes_in", "duration_ms"}. decision is "allow" (the connection was
// made), "deny" (the policy refused it) or "error" (allowed, but resolving or connecting
// failed, or the request was malformed). Outside the sandbox's subvolume: neither the guest nor
// the VMM can rewrite it.
#pragma once
#include <cstdint>
#include <string>

#include "util/json.h"

namespace space::egress {

struct AuditRecord {
  uint64_t time_ms = 0;  // when the request came, since the epoch
  std::string sandbox;
  std::string host;  // as the guest asked ("" when the request was malformed)
  uint16_t port = 0;
  std::string address;     // "ADDR:PORT" connected to; "" when none
  std::string decision;    // allow | deny | error
  std::string rule;        // the rule that allowed it ("" if none)
  std::string reason;      // why not ("" when allowed and connected)
  uint64_t bytes_out = 0;  // guest -> remote
  uint64_t bytes_in = 0;   // remote -> guest
  uint64_t duration_ms = 0;
};

// The JSON object for `r`.
json::Value audit_value(const AuditRecord& r);
// Appends `r` to `path`. Throws on failure.
void audit_append(const std::string& path, const AuditRecord& r);

}  // namespace space::egress
