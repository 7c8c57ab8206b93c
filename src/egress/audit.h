// The network audit log of one sandbox: <root>/egress/audit/<id>.log, one JSON object per
// connection the guest asked for, written by the broker when the connection ends (or at once
// when it is refused): {"time", "sandbox", "host", "port", "address", "decision", "rule",
// "reason", "bytes_out", "bytes_in", "duration_ms"}. decision is "allow" (the connection was
// made), "deny" (the policy refused it) or "error" (allowed, but resolving or connecting
// failed, or the request was malformed). Outside the sandbox's subvolume: neither the guest nor
// the VMM can rewrite it. What a guest can make it hold is bounded (AuditLog): every connection
// made is a line, but refusals and failures beyond the sandbox's budget (util/audit_throttle.h)
// are counted by kind and written as one line with "count" and "kind"; and each file keeps at
// most its bound ([net] audit_max_mib), rotated to <id>.log.1, the new file opening with a
// "rotated" line whose "count" is the lines dropped.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "egress/paths.h"
#include "util/audit_throttle.h"
#include "util/json.h"

namespace space::egress {

// The most an audit file holds unless config.toml says otherwise.
constexpr uint64_t kAuditMaxBytes = 8u << 20;

struct AuditRecord {
  uint64_t time_ms = 0;  // when the request came, since the epoch
  std::string sandbox;
  std::string host;  // as the guest asked ("" when the request was malformed)
  uint16_t port = 0;
  std::string address;     // "ADDR:PORT" connected to; "" when none
  std::string decision;    // allow | deny | error | rotated
  std::string rule;        // the rule that allowed it ("" if none)
  std::string reason;      // why not ("" when allowed and connected)
  uint64_t bytes_out = 0;  // guest -> remote
  uint64_t bytes_in = 0;   // remote -> guest
  uint64_t duration_ms = 0;
  std::string engine;  // the sandbox's engine, as its state.json records it ("" if unknown)
  // A refusal's kind, a fixed label ("not allowed by the policy"): what AuditLog counts it
  // under. Written only on a line standing for others, with their count.
  std::string kind;
  uint64_t count = 0;
};

// The JSON object for `r`.
json::Value audit_value(const AuditRecord& r);
// Appends `r` to `path`, rotating it first when the line would take it past `max_bytes` (0: no
// bound). Throws on failure.
void audit_append(const std::string& path, const AuditRecord& r, uint64_t max_bytes = 0);

// The broker's audit logs, one file per sandbox, written from its connection threads.
class AuditLog {
 public:
  using Clock = std::function<uint64_t()>;  // milliseconds since the epoch
  AuditLog(EgressPaths paths, uint64_t max_bytes, Clock now);

  // Audits `r`: a connection made always, a refusal or failure if the throttle admits it (else
  // it is counted). Writes the counts whose window has passed. Thread-safe; never throws.
  void record(const AuditRecord& r);
  // Writes the counts whose window has passed (`all`: every count, before the broker exits).
  void flush(bool all);

 private:
  void write(const AuditRecord& r);           // with mu_ held
  void write_counts(uint64_t now, bool all);  // with mu_ held

  EgressPaths paths_;
  uint64_t max_bytes_;
  Clock now_;
  std::mutex mu_;  // one writer per file at a time, and the throttle
  AuditThrottle throttle_;
};

}  // namespace space::egress
