// Client of a VMM's control socket (control.sock): one connection per request, one JSON object
// per line each way. Requests: {"op":"ping"} -> {"ok":true,"status":"running"};
// {"op":"stop"} -> {"ok":true} and the VMM exits. Failures come back as {"ok":false,"error":"..."}.
#pragma once
#include <string>

#include "util/json.h"

namespace space::core {

// Sends `req` and returns the reply object (its "ok" is true). Throws Error on connect/timeout,
// on a malformed reply, and with the VMM's message when the reply has "ok": false.
json::Value control_call(const std::string& sock, const json::Value& req, int timeout_ms);

}  // namespace space::core
