// Talking to the credential helper, and starting it on demand. cred_call() connects to
// credd.sock; when nobody is there (ENOENT, ECONNREFUSED) it starts `space __credd` as a daemon
// (start_helper) and tries again. The VMM uses start_helper() alone when a guest asks for a
// secret and the sandbox's helper socket does not answer.
#pragma once
#include <string>

#include "proto/credd.h"
#include "store/context.h"
#include "util/error.h"
#include "util/process.h"

namespace space::cred {

// Starts the helper for `ctx.root` and credential directory `cred_dir` (made if missing) and
// waits up to `timeout_ms` for its ready line ("ok": serving, or another helper already is).
// Returns the child, still owned (release() it to let it run on). Throws with the helper's
// message, or on timeout.
proc::Child start_helper(const store::Context& ctx, const std::string& cred_dir, int timeout_ms);

// Sends one operator request line and returns the reply line, starting the helper if needed.
// Throws Error naming the operation when the helper cannot be reached or does not answer.
std::string cred_exchange(const store::Context& ctx, const proto::credd::Request& req);

// Sends one operator request (proto/credd.h) and returns its typed reply, starting the helper if
// needed. Throws Error with the helper's message (and hint) when it refuses.
// A swap (the broker's): the value, read into secret memory. Throws Error with the helper's
// message when it refuses.
SecretString cred_swap(const store::Context& ctx, const proto::credd::SwapRequest& req);

template <class Req>
proto::credd::ReplyOf<Req> cred_call(const store::Context& ctx, Req req) {
  proto::credd::Request r(std::move(req));
  std::string line = cred_exchange(ctx, r);
  try {
    return proto::credd::decode_reply<proto::credd::ReplyOf<Req>>(line);
  } catch (Error& e) {
    e.add_context("credential helper request " + std::string(proto::credd::op_name(r)));
    throw;
  }
}

}  // namespace space::cred
