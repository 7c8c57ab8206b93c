// `space forward` in the guest: the Forward request of the agent protocol (proto/net.h). On the
// connection's own thread guest-init connects to 127.0.0.1:PORT in the guest (the network
// namespace every exec shares, image or not), answers NetResult (ok, or 502 with the reason:
// nothing listens there), and then copies bytes both ways until both sides are done
// (util/relay.h). The guest needs no network policy for this: the host dialled in.
#pragma once
#include "channel.h"
#include "context.h"
#include "proto/net.h"

namespace space::guest {

// Serves one forwarded connection to completion. Never throws.
void run_forward(Context& ctx, Channel& ch, const proto::ForwardRequest& req) noexcept;

}  // namespace space::guest
