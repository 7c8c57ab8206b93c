// The audit log; see audit.h.
#include "cred/audit.h"

#include "util/json_lines.h"

namespace space::cred {

namespace {
json::Value audit_value(const AuditEntry& e) {
  json::Value v = json::Value::object();
  v.set("time", rfc3339_ms(e.time_ms));
  v.set("sandbox", e.sandbox.empty() ? json::Value() : json::Value(e.sandbox));
  v.set("name", e.name);
  v.set("outcome", e.outcome);
  if (!e.detail.empty()) v.set("detail", e.detail);
  return v;
}
}  // namespace

std::string audit_line(const AuditEntry& e) {
  return json::serialize(audit_value(e));
}

void audit_append(const std::string& path, const AuditEntry& e) {
  jsonl::append(path, audit_value(e));
}

std::vector<json::Value> audit_read(const std::string& path) {
  return jsonl::read(path);
}

}  // namespace space::cred
