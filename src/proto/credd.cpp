// The credential helper's operator protocol codecs; see credd.h. Requests are decoded through one
// table that maps each operation name to the decoder of its struct ("revoke" picks RevokeAll when
// "all" is true).
#include "proto/credd.h"

#include <array>

#include "proto/rpc.h"
#include "util/base64.h"
#include "util/error.h"

namespace space::proto::credd {
namespace {

constexpr const char* kPeer = "the credential helper";
constexpr const char* kSecretKey = "value_base64";

std::optional<uint64_t> optional_uint(const json::Value& o, std::string_view key) {
  const json::Value* v = o.find(key);
  if (!v || v->is_null()) return std::nullopt;
  return json::uint_field(o, key);
}

std::vector<std::string> string_list(const json::Value& o, std::string_view key) {
  const json::Value& a = o.at(key);
  if (!a.is_array()) fail("field \"" + std::string(key) + "\" must be an array");
  std::vector<std::string> out;
  for (const auto& v : a.as_array()) {
    if (!v.is_string()) fail("field \"" + std::string(key) + "\" must hold strings");
    out.push_back(v.as_string());
  }
  return out;
}

json::Value list_of(const std::vector<std::string>& names) {
  json::Value a = json::Value::array();
  for (const auto& n : names) a.push_back(n);
  return a;
}

json::Value object_with(std::initializer_list<std::pair<const char*, json::Value>> members) {
  json::Value o = json::Value::object();
  for (const auto& [k, v] : members) o.set(k, v);
  return o;
}

// Request fields, struct -> object (SetRequest is written by hand: see encode_request).
json::Value fields_of(const PingRequest&) {
  return {};
}
json::Value fields_of(const ListRequest&) {
  return {};
}
json::Value fields_of(const SetRequest&) {
  return {};
}
json::Value fields_of(const RemoveRequest& r) {
  return object_with({{"name", r.name}});
}
json::Value fields_of(const GrantRequest& r) {
  json::Value o = object_with({{"sandbox", r.sandbox}, {"name", r.name}});
  if (r.ttl_ms) o.set("ttl_ms", *r.ttl_ms);
  if (r.uses) o.set("uses", *r.uses);
  if (!r.inject.empty()) o.set("inject", list_of(r.inject));
  return o;
}
json::Value fields_of(const BindingsRequest& r) {
  return object_with({{"sandbox", r.sandbox}, {"host", r.host}, {"port", r.port}});
}
json::Value fields_of(const SwapRequest& r) {
  return object_with({{"sandbox", r.sandbox},
                      {"token", r.token},
                      {"host", r.host},
                      {"port", r.port},
                      {"method", r.method},
                      {"target", r.target}});
}
json::Value fields_of(const RevokeRequest& r) {
  json::Value o = object_with({{"sandbox", r.sandbox}, {"name", r.name}});
  if (!r.reason.empty()) o.set("reason", r.reason);
  return o;
}
json::Value fields_of(const RevokeAllRequest& r) {
  json::Value o = object_with({{"sandbox", r.sandbox}, {"all", true}, {"forget", r.forget}});
  if (!r.reason.empty()) o.set("reason", r.reason);
  return o;
}
json::Value fields_of(const CopyRequest& r) {
  return object_with({{"from", r.from}, {"to", r.to}});
}
json::Value fields_of(const GrantsRequest& r) {
  json::Value o = json::Value::object();
  if (!r.sandbox.empty()) o.set("sandbox", r.sandbox);
  return o;
}

// `head` (a line's opening, up to the secret member's opening quote), `value` in base64, and the
// line's end, written straight into a wiped buffer sized for it.
SecretString line_with_secret(const std::string& head, const SecretString& value) {
  SecretString line =
      SecretString::reserved(head.size() + base64::encoded_size(value.bytes.size()) + 3);
  line.bytes += head;
  base64::encode_into(line.bytes, value.bytes);
  line.bytes += "\"}\n";
  return line;
}

// The set request's line.
SecretString set_line(const SetRequest& r) {
  return line_with_secret(
      "{\"op\":\"set\",\"name\":" + json::quote(r.name) + ",\"" + kSecretKey + "\":\"", r.value);
}

// Decoders, object -> struct. `secrets` holds the set request's value (json::SecretMembers).
using Decoder = Request (*)(const json::Value&, json::SecretMembers&);

Request decode_ping(const json::Value& o, json::SecretMembers&) {
  rpc::only_fields(o, {});
  return PingRequest{};
}
Request decode_list(const json::Value& o, json::SecretMembers&) {
  rpc::only_fields(o, {});
  return ListRequest{};
}
Request decode_set(const json::Value& o, json::SecretMembers& secrets) {
  rpc::only_fields(o, {"name", kSecretKey});
  SetRequest r;
  r.name = json::string_field(o, "name");
  uint64_t at = json::uint_field(o, kSecretKey);  // the parser left the value's index here
  if (at >= secrets.found.size()) fail("field \"value_base64\" is missing");
  const SecretString& b64 = secrets.found[at];
  r.value = SecretString::reserved(b64.bytes.size() / 4 * 3);
  if (!base64::decode_into(r.value.bytes, b64.view())) fail("field \"value_base64\" is not base64");
  return r;
}
Request decode_rm(const json::Value& o, json::SecretMembers&) {
  rpc::only_fields(o, {"name"});
  return RemoveRequest{json::string_field(o, "name")};
}
Request decode_grant(const json::Value& o, json::SecretMembers&) {
  rpc::only_fields(o, {"sandbox", "name", "ttl_ms", "uses", "inject"});
  GrantRequest r{json::string_field(o, "sandbox"),
                 json::string_field(o, "name"),
                 optional_uint(o, "ttl_ms"),
                 optional_uint(o, "uses"),
                 {}};
  if (o.find("inject")) r.inject = string_list(o, "inject");
  return r;
}
uint16_t port_field(const json::Value& o) {
  uint64_t p = json::uint_field(o, "port", 65535);
  if (p == 0) fail("field \"port\" must be 1-65535");
  return static_cast<uint16_t>(p);
}
Request decode_bindings(const json::Value& o, json::SecretMembers&) {
  rpc::only_fields(o, {"sandbox", "host", "port"});
  return BindingsRequest{json::string_field(o, "sandbox"), json::string_field(o, "host"),
                         port_field(o)};
}
Request decode_swap(const json::Value& o, json::SecretMembers&) {
  rpc::only_fields(o, {"sandbox", "token", "host", "port", "method", "target"});
  return SwapRequest{json::string_field(o, "sandbox"), json::string_field(o, "token"),
                     json::string_field(o, "host"),    port_field(o),
                     json::string_field(o, "method"),  json::string_field(o, "target")};
}
Request decode_revoke(const json::Value& o, json::SecretMembers&) {
  if (rpc::bool_field_or(o, "all", false)) {
    rpc::only_fields(o, {"sandbox", "all", "forget", "reason"});
    return RevokeAllRequest{json::string_field(o, "sandbox"),
                            rpc::bool_field_or(o, "forget", false),
                            json::string_field_or(o, "reason", "")};
  }
  rpc::only_fields(o, {"sandbox", "name", "all", "reason"});
  return RevokeRequest{json::string_field(o, "sandbox"), json::string_field(o, "name"),
                       json::string_field_or(o, "reason", "")};
}
Request decode_copy(const json::Value& o, json::SecretMembers&) {
  rpc::only_fields(o, {"from", "to"});
  return CopyRequest{json::string_field(o, "from"), json::string_field(o, "to")};
}
Request decode_grants(const json::Value& o, json::SecretMembers&) {
  rpc::only_fields(o, {"sandbox"});
  return GrantsRequest{json::string_field_or(o, "sandbox", "")};
}

struct OpEntry {
  std::string_view name;
  Decoder decode;
};
// One entry per operation name; op_name() maps each variant alternative to its entry.
constexpr std::array<OpEntry, 10> kOps = {{
    {"ping", decode_ping},
    {"set", decode_set},
    {"list", decode_list},
    {"rm", decode_rm},
    {"grant", decode_grant},
    {"revoke", decode_revoke},
    {"copy", decode_copy},
    {"grants", decode_grants},
    {"bindings", decode_bindings},
    {"swap", decode_swap},
}};
// The kOps entry of each Request alternative, in variant order (RevokeAll shares "revoke").
constexpr std::array<size_t, std::variant_size_v<Request>> kEntryOf = {0, 1, 2, 3, 4, 5,
                                                                       5, 6, 7, 8, 9};

SecretInfo secret_info_from(const json::Value& o) {
  return {json::string_field(o, "name"), json::uint_field(o, "size"),
          json::string_field(o, "created"), json::string_field(o, "updated")};
}

GrantInfo grant_info_from(const json::Value& o) {
  GrantInfo g;
  g.sandbox = json::string_field(o, "sandbox");
  g.name = json::string_field(o, "name");
  g.granted = json::string_field(o, "granted");
  if (const json::Value* e = o.find("expires"); e && !e->is_null())
    g.expires = json::string_field(o, "expires");
  g.uses_left = optional_uint(o, "uses_left");
  g.state = json::string_field(o, "state");
  if (o.find("inject")) g.inject = string_list(o, "inject");
  return g;
}

}  // namespace

std::string_view op_name(const Request& r) {
  return kOps[kEntryOf[r.index()]].name;
}

SecretString encode_request(const Request& r) {
  if (const auto* set = std::get_if<SetRequest>(&r)) return set_line(*set);
  return SecretString(
      rpc::request_line(op_name(r), std::visit([](const auto& x) { return fields_of(x); }, r)));
}

std::vector<std::string> sandbox_ids(const Request& req) {
  return std::visit(
      [](const auto& r) -> std::vector<std::string> {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, CopyRequest>)
          return {r.from, r.to};
        else if constexpr (std::is_same_v<T, GrantsRequest>)
          return r.sandbox.empty() ? std::vector<std::string>{} : std::vector{r.sandbox};
        else if constexpr (requires { r.sandbox; })
          return {r.sandbox};
        else
          return {};
      },
      req);
}

Request decode_request(std::string_view line) {
  json::SecretMembers secrets{{kSecretKey}, {}};
  json::Value o = json::parse(line, {.secrets = &secrets});
  std::string op = rpc::op_of(o);
  for (const auto& e : kOps) {
    if (e.name != op) continue;
    try {
      return e.decode(o, secrets);
    } catch (Error& err) {
      err.add_context("credential helper request \"" + op + "\"");
      throw;
    }
  }
  fail("unknown credential helper operation \"" + op + "\"");
}

json::Value to_json(const SecretInfo& s) {
  return object_with(
      {{"name", s.name}, {"size", s.size}, {"created", s.created}, {"updated", s.updated}});
}

json::Value to_json(const GrantInfo& g) {
  json::Value o =
      object_with({{"sandbox", g.sandbox},
                   {"name", g.name},
                   {"granted", g.granted},
                   {"expires", g.expires ? json::Value(*g.expires) : json::Value()},
                   {"uses_left", g.uses_left ? json::Value(*g.uses_left) : json::Value()},
                   {"state", g.state}});
  if (!g.inject.empty()) o.set("inject", list_of(g.inject));
  return o;
}

std::string encode_reply(const PingReply& r) {
  return rpc::ok_line(object_with({{"pid", r.pid}}));
}
std::string encode_reply(const SetReply& r) {
  return rpc::ok_line(object_with({{"replaced", r.replaced}}));
}
std::string encode_reply(const ListReply& r) {
  json::Value a = json::Value::array();
  for (const auto& s : r.secrets) a.push_back(to_json(s));
  return rpc::ok_line(object_with({{"secrets", std::move(a)}}));
}
std::string encode_reply(const RevokeAllReply& r) {
  return rpc::ok_line(object_with({{"revoked", list_of(r.revoked)}}));
}
std::string encode_reply(const CopyReply& r) {
  return rpc::ok_line(object_with({{"copied", list_of(r.copied)}}));
}
std::string encode_reply(const GrantsReply& r) {
  json::Value a = json::Value::array();
  for (const auto& g : r.grants) a.push_back(to_json(g));
  return rpc::ok_line(object_with({{"grants", std::move(a)}}));
}
std::string encode_reply(const Done&) {
  return rpc::ok_line({});
}
std::string encode_reply(const BindingsReply& r) {
  json::Value a = json::Value::array();
  for (const auto& b : r.placeholders)
    a.push_back(object_with({{"token", b.token}, {"name", b.name}, {"bound", b.bound}}));
  return rpc::ok_line(object_with({{"placeholders", std::move(a)}, {"elsewhere", r.elsewhere}}));
}

SecretString encode_swap_reply(const SwapReply& r) {
  return line_with_secret(std::string("{\"ok\":true,\"") + kSecretKey + "\":\"", r.value);
}

SwapReply decode_swap_reply(std::string_view line) {
  json::SecretMembers secrets{{kSecretKey}, {}};
  json::Value o;
  try {
    o = json::parse(line, {.secrets = &secrets});
  } catch (Error& e) {
    e.add_context("malformed swap reply from " + std::string(kPeer));
    throw;
  }
  if (const json::Value* ok = o.is_object() ? o.find("ok") : nullptr;
      ok && ok->is_bool() && !ok->as_bool()) {
    (void)rpc::open_reply(line, kPeer);  // throws the helper's error with its hint
  }
  const json::Value* at = o.is_object() ? o.find(kSecretKey) : nullptr;
  if (!at || !at->is_int() || uint64_t(at->as_int()) >= secrets.found.size())
    fail("malformed swap reply from " + std::string(kPeer) + ": no value");
  SwapReply r;
  const SecretString& b64 = secrets.found[size_t(at->as_int())];
  r.value = SecretString::reserved(b64.bytes.size() / 4 * 3);
  if (!base64::decode_into(r.value.bytes, b64.view()))
    fail("malformed swap reply from " + std::string(kPeer) + ": value not base64");
  return r;
}

template <>
PingReply decode_reply<PingReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "ping", [](const json::Value& o) {
    const json::Value& pid = o.at("pid");
    if (!pid.is_int()) fail("field \"pid\" must be an integer");
    return PingReply{pid.as_int()};
  });
}

template <>
SetReply decode_reply<SetReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "set", [](const json::Value& o) {
    const json::Value& v = o.at("replaced");
    if (!v.is_bool()) fail("field \"replaced\" must be true or false");
    return SetReply{v.as_bool()};
  });
}

template <>
ListReply decode_reply<ListReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "list", [](const json::Value& o) {
    ListReply r;
    const json::Value& a = o.at("secrets");
    if (!a.is_array()) fail("field \"secrets\" must be an array");
    for (const auto& s : a.as_array()) r.secrets.push_back(secret_info_from(s));
    return r;
  });
}

template <>
RevokeAllReply decode_reply<RevokeAllReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "revoke", [](const json::Value& o) {
    return RevokeAllReply{string_list(o, "revoked")};
  });
}

template <>
CopyReply decode_reply<CopyReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "copy", [](const json::Value& o) {
    return CopyReply{string_list(o, "copied")};
  });
}

template <>
GrantsReply decode_reply<GrantsReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "grants", [](const json::Value& o) {
    GrantsReply r;
    const json::Value& a = o.at("grants");
    if (!a.is_array()) fail("field \"grants\" must be an array");
    for (const auto& g : a.as_array()) r.grants.push_back(grant_info_from(g));
    return r;
  });
}

template <>
BindingsReply decode_reply<BindingsReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "bindings", [](const json::Value& o) {
    BindingsReply r;
    const json::Value& a = o.at("placeholders");
    if (!a.is_array()) fail("field \"placeholders\" must be an array");
    for (const auto& b : a.as_array()) {
      const json::Value* bound = b.find("bound");
      if (!bound || !bound->is_bool()) fail("field \"bound\" must be true or false");
      r.placeholders.push_back(
          {json::string_field(b, "token"), json::string_field(b, "name"), bound->as_bool()});
    }
    const json::Value* elsewhere = o.find("elsewhere");
    if (!elsewhere || !elsewhere->is_bool()) fail("field \"elsewhere\" must be true or false");
    r.elsewhere = elsewhere->as_bool();
    return r;
  });
}

template <>
Done decode_reply<Done>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "an", [](const json::Value&) { return Done{}; });
}

}  // namespace space::proto::credd
