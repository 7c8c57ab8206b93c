// Talking to the credential helper, and starting it on demand. cred_call() connects to
// credd.sock; when nobody is there (ENOENT, ECONNREFUSED) it starts `space __credd` as a daemon
// (start_helper) and tries again. The VMM uses start_helper() alone when a guest asks for a
// secret and the sandbox's helper socket does not answer.
#pragma once
#include <string>

#include "store/context.h"
#include "util/json.h"
#include "util/process.h"

namespace space::cred {

// Starts the helper for `ctx.root` and credential directory `cred_dir` (made if missing) and
// waits up to `timeout_ms` for its ready line ("ok": serving, or another helper already is).
// Returns the child, still owned (release() it to let it run on). Throws with the helper's
// message, or on timeout.
proc::Child start_helper(const store::Context& ctx, const std::string& cred_dir, int timeout_ms);

// Sends one operator request and returns the reply (its "ok" is true), starting the helper if
// needed. Throws Error with the helper's message (and hint) when it refuses.
json::Value cred_call(const store::Context& ctx, const json::Value& req);

}  // namespace space::cred
