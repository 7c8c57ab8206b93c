// The line protocols' envelope; see rpc.h.
#include "proto/rpc.h"

#include "util/error.h"

namespace space::proto::rpc {

std::string op_of(const json::Value& req) {
  if (!req.is_object()) fail("a request must be a JSON object");
  const json::Value* op = req.find("op");
  if (!op || !op->is_string()) fail("a request needs \"op\", a string");
  return op->as_string();
}

namespace {
json::Value with_first(std::string_view key, json::Value first, json::Value fields) {
  json::Value out = json::Value::object();
  out.set(std::string(key), std::move(first));
  if (fields.is_null()) return out;
  for (auto& [k, v] : fields.as_object()) out.set(k, std::move(v));
  return out;
}
}  // namespace

std::string request_line(std::string_view op, json::Value fields) {
  return json::serialize(with_first("op", std::string(op), std::move(fields))) + "\n";
}

std::string ok_line(json::Value fields) {
  return json::serialize(with_first("ok", true, std::move(fields))) + "\n";
}

std::string error_line(const std::string& message, const std::string& hint) {
  json::Value r = json::Value::object();
  r.set("ok", false);
  r.set("error", message.empty() ? std::string("failed without a message") : message);
  if (!hint.empty()) r.set("hint", hint);
  return json::serialize(r) + "\n";
}

json::Value open_reply(std::string_view line, const std::string& peer) {
  json::Value reply;
  try {
    reply = json::parse(line);
  } catch (Error& e) {
    e.add_context("malformed reply from " + peer);
    throw;
  }
  const json::Value* ok = reply.find("ok");
  if (!ok || !ok->is_bool()) fail("malformed reply from " + peer + ": no \"ok\"");
  if (!ok->as_bool()) {
    std::string hint = json::string_field_or(reply, "hint", "");
    throw Error(json::string_field_or(reply, "error", peer + " refused the request"), 0, hint);
  }
  return reply;
}

bool bool_field_or(const json::Value& obj, std::string_view key, bool dflt) {
  const json::Value* v = obj.find(key);
  if (!v || v->is_null()) return dflt;
  if (!v->is_bool()) fail("field \"" + std::string(key) + "\" must be true or false");
  return v->as_bool();
}

void only_fields(const json::Value& obj, std::initializer_list<std::string_view> known) {
  for (const auto& [k, _] : obj.as_object()) {
    if (k == "op") continue;
    bool ok = false;
    for (auto n : known) ok = ok || k == n;
    if (!ok) fail("unknown field \"" + k + "\"");
  }
}

}  // namespace space::proto::rpc
