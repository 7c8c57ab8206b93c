// The network audit log; see audit.h.
#include "egress/audit.h"

#include "util/json_lines.h"

namespace space::egress {

json::Value audit_value(const AuditRecord& r) {
  json::Value v = json::Value::object();
  v.set("time", jsonl::rfc3339_ms(r.time_ms));
  v.set("sandbox", r.sandbox);
  v.set("host", r.host);
  v.set("port", r.port);
  v.set("address", r.address);
  v.set("decision", r.decision);
  v.set("rule", r.rule);
  v.set("reason", r.reason);
  v.set("bytes_out", r.bytes_out);
  v.set("bytes_in", r.bytes_in);
  v.set("duration_ms", r.duration_ms);
  return v;
}

void audit_append(const std::string& path, const AuditRecord& r) {
  jsonl::append(path, audit_value(r));
}

}  // namespace space::egress
