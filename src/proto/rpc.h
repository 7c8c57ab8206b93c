// The envelope of the host's line protocols: a VMM's control socket (proto/control.h) and the
// credential helper's operator socket (proto/credd.h). Each connection carries JSON objects, one
// per line: a request is {"op": NAME, ...its fields}; its reply is {"ok": true, ...its fields} or
// {"ok": false, "error": MESSAGE, "hint": FIX} (hint optional). The typed codecs build on these
// helpers; nothing else spells "ok" or "op".
#pragma once
#include <string>
#include <string_view>

#include "util/json.h"

namespace space::proto::rpc {

// A request object's operation name; throws Error unless `req` is an object with a string "op".
std::string op_of(const json::Value& req);
// A request line: `fields` (an object, or null for none) with "op": `op` first, and a newline.
std::string request_line(std::string_view op, json::Value fields);
// The reply line of a success: `fields` (an object, or null for none) with "ok": true first.
std::string ok_line(json::Value fields);
// The reply line of a failure.
std::string error_line(const std::string& message, const std::string& hint = "");
// The reply line `run` returns (a success), or the error line for whatever it throws: the one
// place a server turns an exception into {"ok": false}.
template <class F>
std::string answer(F&& run) noexcept {
  try {
    return run();
  } catch (const Error& e) {
    return error_line(e.what(), e.hint());
  } catch (const std::exception& e) {
    return error_line(e.what());
  }
}
// Opens a reply line from `peer` ("the VMM"): returns it when "ok" is true; throws Error with the
// peer's message and hint when "ok" is false, and an Error naming `peer` when the line is not a
// reply at all.
json::Value open_reply(std::string_view line, const std::string& peer);
// open_reply, then `convert(fields)`; an error in the conversion names the reply ("malformed
// <what> reply from <peer>").
template <class F>
auto open_reply_as(std::string_view line, const std::string& peer, const std::string& what,
                   F&& convert) {
  json::Value fields = open_reply(line, peer);
  try {
    return convert(fields);
  } catch (Error& e) {
    e.add_context("malformed " + what + " reply from " + peer);
    throw;
  }
}

// Field readers that name the field in errors (json::string_field and friends do the rest).
bool bool_field_or(const json::Value& obj, std::string_view key, bool dflt);
// Rejects members of `obj` other than `known` ("op" is always allowed).
void only_fields(const json::Value& obj, std::initializer_list<std::string_view> known);

}  // namespace space::proto::rpc
