// The network audit log; see audit.h.
#include "egress/audit.h"

#include "util/error.h"
#include "util/json_lines.h"
#include "util/log.h"

namespace space::egress {

json::Value audit_value(const AuditRecord& r) {
  json::Value v = json::Value::object();
  v.set("time", jsonl::rfc3339_ms(r.time_ms));
  v.set("sandbox", r.sandbox);
  if (!r.engine.empty()) v.set("engine", r.engine);
  v.set("host", r.host);
  v.set("port", r.port);
  v.set("address", r.address);
  v.set("decision", r.decision);
  v.set("rule", r.rule);
  v.set("reason", r.reason);
  v.set("bytes_out", r.bytes_out);
  v.set("bytes_in", r.bytes_in);
  v.set("duration_ms", r.duration_ms);
  if (r.count) {
    if (!r.kind.empty()) v.set("kind", r.kind);
    v.set("count", r.count);
  }
  return v;
}

void audit_append(const std::string& path, const AuditRecord& r, uint64_t max_bytes) {
  jsonl::Bound bound{max_bytes, [&](uint64_t dropped) {
                       AuditRecord m;
                       m.time_ms = r.time_ms;
                       m.sandbox = r.sandbox;
                       m.decision = "rotated";
                       m.reason = "the log reached its bound of " + std::to_string(max_bytes) +
                                  " bytes: the lines before this one are in " +
                                  jsonl::previous(path.substr(path.rfind('/') + 1)) + ", and the " +
                                  std::to_string(dropped) + " lines that were there are dropped";
                       m.count = dropped;
                       return audit_value(m);
                     }};
  jsonl::append(path, audit_value(r), bound);
}

AuditLog::AuditLog(EgressPaths paths, uint64_t max_bytes, Clock now)
    : paths_(std::move(paths)), max_bytes_(max_bytes), now_(std::move(now)) {}

void AuditLog::write(const AuditRecord& r) {
  try {
    audit_append(audit_file(paths_, r.sandbox), r, max_bytes_);
  } catch (const std::exception& e) {
    log::error("sandbox " + r.sandbox + ": audit: " + e.what());
  }
}

void AuditLog::write_counts(uint64_t now, bool all) {
  for (const auto& c : throttle_.due(now, all)) {
    // "deny: K" or "error: K" (record() below); "other" when a sandbox had too many kinds.
    const bool error = c.kind.rfind("error: ", 0) == 0;
    const size_t colon = c.kind.find(": ");
    AuditRecord r;
    r.time_ms = now;
    r.sandbox = c.sandbox;
    r.decision = error ? "error" : "deny";
    r.kind = colon == std::string::npos ? c.kind : c.kind.substr(colon + 2);
    r.count = c.count;
    r.duration_ms = now > c.first_ms ? now - c.first_ms : 0;
    AuditThrottle::Count shown = c;
    shown.kind = r.kind;
    r.reason = AuditThrottle::describe(shown,
                                       colon == std::string::npos ? "refused or failed"
                                       : error                    ? "failed"
                                                                  : "denied",
                                       now);
    write(r);
  }
}

void AuditLog::record(const AuditRecord& r) {
  std::lock_guard<std::mutex> g(mu_);
  const uint64_t now = now_();
  write_counts(now, false);
  if (r.decision == "allow") return write(r);
  // The throttle's kind holds the decision too, so that a count knows which it stands for.
  std::string kind = r.decision == "deny" ? "deny: " : "error: ";
  kind += r.kind.empty() ? r.decision : r.kind;
  if (throttle_.admit(r.sandbox, kind, now)) write(r);
}

void AuditLog::flush(bool all) {
  std::lock_guard<std::mutex> g(mu_);
  write_counts(now_(), all);
}

}  // namespace space::egress
