// TLS interception of one guest connection to a host a secret is bound to (issue 42), after the
// broker has connected to the host: TLS with the host first, verified against the host's trust
// store (plus [egress] ca_file: upstream_handshake), and only then, the guest told the tunnel is
// open, TLS with the guest as that host, with a certificate the sandbox's own CA signs
// (cred/sandbox_ca.h; minted once per CA and host and kept in memory), ALPN http/1.1 only. Then
// bytes both ways: the guest's through the request rewriter (egress/http_rewrite.h), which swaps
// bound placeholders for values, the host's back untouched; close_notify passed on each way,
// until both sides are done, the connection idles too long, or the broker stops. Both sockets are
// non-blocking from here on; nothing is read or written past their TLS.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cred/openssl.h"
#include "egress/http_rewrite.h"

namespace space::egress {

using SslPtr = ossl::Ssl;

struct InterceptOptions {
  std::string host;     // as the guest named it: a name (SNI, verified) or an address
  std::string ca_cert;  // the sandbox's CA: certificate and key files
  std::string ca_key;
  std::string trust_file;  // more CAs to verify hosts against ("" = the system's only)
  std::vector<Placeholder> placeholders;
  RequestRewriter::Resolve resolve;
  RequestRewriter::Stray stray;
  int handshake_ms = 10'000;  // the bound host's handshake
  // The guest's: its client may load a CA bundle and make its key share first, which on a PVM
  // host (guest kernel work interpreted) took git more than 10 s.
  int guest_handshake_ms = 60'000;
  int idle_ms = 600'000;
  int stop_fd = -1;
};

// The host's side, verified: a TLS session over connected socket `remote`, or nullptr with `why`
// set (the handshake failed: a certificate that does not verify for o.host, no TLS at all, a
// timeout).
SslPtr upstream_handshake(int remote, const InterceptOptions& o, std::string& why);

struct InterceptResult {
  std::string ended;                     // how it ended, for the audit line
  uint64_t bytes_out = 0, bytes_in = 0;  // the guest's bytes (before rewriting), the host's
  uint64_t requests = 0, swaps = 0;
  bool refused = false;  // the guest's TLS or a request was refused (`ended` says why)
};

// Serves the guest's side over connected socket `guest` and relays with `upstream` (which
// upstream_handshake made over `remote`). Never throws.
InterceptResult intercept(int guest, int remote, SslPtr upstream, const InterceptOptions& o);

}  // namespace space::egress
