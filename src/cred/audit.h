// The audit log: <cred dir>/audit.log, one JSON object per line, appended with O_APPEND (one
// write per line) and mode 0600. Every grant, fetch, denial, expiry and revocation, and every
// secret set or removed, is a line: {"time","sandbox","name","outcome","detail"} where outcome
// is one of granted, fetched, denied, expired, revoked, set, removed, and sandbox is null for
// set/removed. A value never appears: the type has no field for one. Denials a sandbox repeats
// beyond its budget are counted and written as one line with "count" (cred/service.h). The file
// is bounded (kAuditMaxBytes): when full it becomes audit.log.1, replacing the generation there,
// and the new file opens with an outcome "rotated" line whose "count" is the lines dropped.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "util/json.h"
#include "util/json_lines.h"

namespace space::cred {

// The most audit.log (and so audit.log.1) holds.
constexpr uint64_t kAuditMaxBytes = 8u << 20;

struct AuditEntry {
  uint64_t time_ms = 0;  // since the epoch
  std::string sandbox;   // "" for operator events on the store (set, removed)
  std::string name;
  std::string outcome;  // granted|fetched|denied|expired|revoked|set|removed|rotated
  std::string detail;   // why, or the grant's limits; "" when there is nothing to add
  uint64_t count = 0;   // a line standing for others: how many requests (or lines dropped)
  std::string engine;   // the sandbox's engine from its state.json ("" if none or unknown)
};

using jsonl::rfc3339_ms;  // "2026-11-29T20:00:00.123Z" for ms since the epoch
// Appends `e` to `path` as one JSON line (time as RFC 3339 UTC with milliseconds; the file is
// created 0600), rotating it first when the line would take it past `max_bytes`. Throws on
// failure.
void audit_append(const std::string& path, const AuditEntry& e,
                  uint64_t max_bytes = kAuditMaxBytes);
// Every line of `path`'s previous generation, then of `path` (missing files: none). Throws
// naming the line on bad content.
std::vector<json::Value> audit_read(const std::string& path);

}  // namespace space::cred
