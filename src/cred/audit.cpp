// The audit log; see audit.h.
#include "cred/audit.h"

#include "util/json_lines.h"

namespace space::cred {

namespace {
json::Value audit_value(const AuditEntry& e) {
  json::Value v = json::Value::object();
  v.set("time", rfc3339_ms(e.time_ms));
  v.set("sandbox", e.sandbox.empty() ? json::Value() : json::Value(e.sandbox));
  if (!e.engine.empty()) v.set("engine", e.engine);
  v.set("name", e.name);
  v.set("outcome", e.outcome);
  if (!e.detail.empty()) v.set("detail", e.detail);
  if (e.count) v.set("count", e.count);
  return v;
}
}  // namespace

void audit_append(const std::string& path, const AuditEntry& e, uint64_t max_bytes) {
  jsonl::Bound bound{max_bytes, [&](uint64_t dropped) {
                       AuditEntry m{e.time_ms, "", "", "rotated", "", dropped};
                       m.detail = "the log reached its bound of " + std::to_string(max_bytes) +
                                  " bytes: the lines before this one are in " +
                                  jsonl::previous(path.substr(path.rfind('/') + 1)) + ", and the " +
                                  std::to_string(dropped) + " lines that were there are dropped";
                       return audit_value(m);
                     }};
  jsonl::append(path, audit_value(e), bound);
}

std::vector<json::Value> audit_read(const std::string& path) {
  return jsonl::read_generations(path);
}

}  // namespace space::cred
