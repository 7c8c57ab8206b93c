// Reaching the network broker, and starting it on demand. A VMM whose guest dials the egress
// port while the sandbox's socket does not answer calls ensure_broker(): it asks a running
// broker to look for new policies ("sync"), or starts `space __egress` (which looks at start),
// and then the VMM dials again.
#pragma once
#include <string>

#include "store/context.h"
#include "util/process.h"

namespace space::egress {

// Starts the broker for `ctx.root` and waits up to `timeout_ms` for its ready line. Returns the
// child, still owned (release() it to let it run on). Throws with the broker's message.
proc::Child start_broker(const store::Context& ctx, int timeout_ms);
// Whether a broker serves `ctx.root` now (a lock probe).
bool broker_running(const store::Context& ctx);
// Makes sure a broker serves `ctx.root` and listens for every sandbox with a policy: "sync" to a
// running one, else a start. Throws when neither works.
void ensure_broker(const store::Context& ctx, int timeout_ms);

}  // namespace space::egress
