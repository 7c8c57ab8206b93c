// The credential helper's operator protocol (credd.sock), typed: what `space secret`, `grant`,
// `revoke`, and the create/branch/checkpoint/destroy steps ask of `space __credd`. One request
// struct per operation, each with its reply, on the line envelope of rpc.h:
//   ping                                  -> pid
//   set     name, value                   -> replaced     (value travels as value_base64)
//   list                                  -> secrets [{name, size, created, updated}]
//   rm      name                          -> {}           (an error if there is none)
//   grant   sandbox, name, ttl_ms?, uses? -> {}           (the sandbox must exist)
//   revoke  sandbox, name, reason?        -> {}           (an error if not granted)
//   revoke  sandbox, all: true, forget?, reason? -> revoked [names]  (forget: it was destroyed)
//   copy    from, to                      -> copied [names]   (branch --keep-secrets)
//   grants  sandbox?                      -> grants [{sandbox, name, granted, expires, uses_left,
//                                                     state, inject?}]
//   bindings sandbox, host, port          -> placeholders [{token, name, bound}]   (the broker)
//   swap    sandbox, token, host, port, method, target -> value  (the broker: spends a use;
//                                                     the value travels as value_base64)
// A grant with `inject` hosts (HOST:PORT) is a binding: its sandbox gets a placeholder instead
// of the value, and the broker swaps the value in only toward those hosts (issue 42).
// A secret value never enters a json::Value: a set request is written straight into a buffer
// that wipes itself, and decoded with json::SecretMembers. Request decoders reject unknown
// operations and fields and bad kinds with an Error naming them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "util/json.h"
#include "util/wipe.h"

namespace space::proto::credd {

struct PingRequest {};
struct PingReply {
  int64_t pid = 0;
};

struct SetRequest {
  std::string name;
  SecretString value;  // raw bytes
};
struct SetReply {
  bool replaced = false;
};

struct ListRequest {};
struct SecretInfo {
  std::string name;
  uint64_t size = 0;    // bytes
  std::string created;  // RFC 3339
  std::string updated;  // RFC 3339
};
struct ListReply {
  std::vector<SecretInfo> secrets;
};

struct RemoveRequest {
  std::string name;
};

struct GrantRequest {
  std::string sandbox;
  std::string name;
  std::optional<uint64_t> ttl_ms;
  std::optional<uint64_t> uses;
  std::vector<std::string>
      inject;  // "HOST:PORT": bound to these hosts (a placeholder in the guest)
};

struct RevokeRequest {
  std::string sandbox;
  std::string name;
  std::string reason;  // audited; "" for none
};

struct RevokeAllRequest {
  std::string sandbox;
  bool forget = false;  // the sandbox is gone: drop it and its socket too
  std::string reason;
};
struct RevokeAllReply {
  std::vector<std::string> revoked;
};

struct CopyRequest {
  std::string from;
  std::string to;
};
struct CopyReply {
  std::vector<std::string> copied;
};

struct GrantsRequest {
  std::string sandbox;  // "" = every sandbox
};
struct GrantInfo {
  std::string sandbox;
  std::string name;
  std::string granted;                 // RFC 3339
  std::optional<std::string> expires;  // RFC 3339, or none
  std::optional<uint64_t> uses_left;   // or unlimited
  std::string state;                   // "active", "expired" or "used up"
  std::vector<std::string> inject;     // the hosts it is bound to ("" none: the value itself)
};
struct GrantsReply {
  std::vector<GrantInfo> grants;
};

// The broker, for a connection of `sandbox` to host:port: every placeholder of the sandbox, and
// whether it is bound to that host (and so swapped there).
struct BindingsRequest {
  std::string sandbox;
  std::string host;
  uint16_t port = 0;
};
struct Binding {
  std::string token;
  std::string name;
  bool bound = false;
};
struct BindingsReply {
  std::vector<Binding> placeholders;
  // The host is bound to a secret at another port: a connection there (plain HTTP) is refused,
  // so that no request meant for the bound port goes out in clear text.
  bool elsewhere = false;
};

// The broker, about to send a request of `sandbox` carrying placeholder `token` to host:port:
// the value, with one use of the grant spent and the swap audited (method and target, never the
// value). Refused (an error reply) when the grant is gone, spent, expired, or not bound there.
struct SwapRequest {
  std::string sandbox;
  std::string token;
  std::string host;
  uint16_t port = 0;
  std::string method;
  std::string target;
};
struct SwapReply {
  SecretString value;
};

// The reply of rm, grant and revoke: success and nothing else.
struct Done {};

using Request =
    std::variant<PingRequest, SetRequest, ListRequest, RemoveRequest, GrantRequest, RevokeRequest,
                 RevokeAllRequest, CopyRequest, GrantsRequest, BindingsRequest, SwapRequest>;

// The reply type of each request type: ReplyOf<ListRequest> is ListReply. Every request type
// names its reply here, so a new one without a reply type does not compile.
template <class Req>
struct ReplyTo;
template <>
struct ReplyTo<RemoveRequest> {
  using type = Done;
};
template <>
struct ReplyTo<GrantRequest> {
  using type = Done;
};
template <>
struct ReplyTo<RevokeRequest> {
  using type = Done;
};
template <>
struct ReplyTo<PingRequest> {
  using type = PingReply;
};
template <>
struct ReplyTo<SetRequest> {
  using type = SetReply;
};
template <>
struct ReplyTo<ListRequest> {
  using type = ListReply;
};
template <>
struct ReplyTo<RevokeAllRequest> {
  using type = RevokeAllReply;
};
template <>
struct ReplyTo<CopyRequest> {
  using type = CopyReply;
};
template <>
struct ReplyTo<GrantsRequest> {
  using type = GrantsReply;
};
template <>
struct ReplyTo<BindingsRequest> {
  using type = BindingsReply;
};
template <>
struct ReplyTo<SwapRequest> {
  using type = SwapReply;
};
template <class Req>
using ReplyOf = typename ReplyTo<Req>::type;

// The operation's name on the wire ("set", "revoke", ...).
std::string_view op_name(const Request& r);

// The sandbox ids a request names (its `sandbox`; a copy's `from` and `to`; none for a grants
// request of every sandbox, or a request about secrets alone), for the helper to validate once
// as the request arrives.
std::vector<std::string> sandbox_ids(const Request& r);

// A request line (newline-terminated), in a buffer that wipes itself.
SecretString encode_request(const Request& r);
// The request a line carries; throws Error naming what is wrong.
Request decode_request(std::string_view line);

// The fields of each reply (also what `space secret list|grants --format json` prints).
json::Value to_json(const SecretInfo& s);
json::Value to_json(const GrantInfo& g);

// A success reply line for each reply type.
std::string encode_reply(const PingReply& r);
std::string encode_reply(const SetReply& r);
std::string encode_reply(const ListReply& r);
std::string encode_reply(const RevokeAllReply& r);
std::string encode_reply(const CopyReply& r);
std::string encode_reply(const GrantsReply& r);
std::string encode_reply(const Done& r);
std::string encode_reply(const BindingsReply& r);
// The swap reply carries a value: its line is written straight into secret memory.
SecretString encode_swap_reply(const SwapReply& r);
// The value a swap reply line carries (decoded into secret memory); throws as decode_reply.
SwapReply decode_swap_reply(std::string_view line);

// The reply a line carries: T is one of the reply types. Throws Error with the helper's message
// (and hint) for an {"ok": false} reply, or naming what is malformed.
template <class T>
T decode_reply(std::string_view line);

}  // namespace space::proto::credd
