// `space __egress`: the network broker, one per run directory (flock on egress.lock), a daemon
// started on demand (egress/client.h) by a VMM whose guest opens a connection while none runs.
// It listens on <run base>/<id>/egress.sock for every sandbox that has a policy file, and on
// an operator socket where the VMMs ask it to look again ("sync": a sandbox gained a policy
// since the last look). A connection accepted on a sandbox's socket is served for that sandbox
// and no other, on its own thread (egress/connection.h); the peer must be the sandbox's VMM
// (SO_PEERCRED pid and the start time in state.json). Each sandbox has at most
// max_connections at once (config.toml [net]), the broker at most kMaxConnections; beyond
// that a connection is refused with 503 and audited. Every connection made is one audit line;
// refusals and failures are audited within the sandbox's budget and counted beyond it
// (egress/audit.h), and each audit file is bounded by [net] audit_max_mib.
// It exits after `idle_s` seconds with no connection ($SPACE_EGRESS_IDLE_SECONDS, default 60)
// or on SIGTERM/SIGINT: in-flight connections are ended, their audit lines written, and its
// sockets removed.
#pragma once
#include <cstdint>
#include <string>

#include "egress/audit.h"

namespace space::egress {

struct BrokerOptions {
  std::string root;                           // the run directory
  int ready_fd = -1;                          // "ok\n" or "error: ...\n" goes here once serving
  int max_per_sandbox = 64;                   // concurrent connections per sandbox
  uint64_t audit_max_bytes = kAuditMaxBytes;  // per audit file
};

// Runs the broker until idle; returns the process exit code.
int egress_main(const BrokerOptions& opts);
// Seconds of idleness before exit: $SPACE_EGRESS_IDLE_SECONDS (1..86400), default 60.
int broker_idle_seconds();

}  // namespace space::egress
