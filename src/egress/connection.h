// One guest connection through the broker, served start to end on its own thread: read the
// guest's NetConnect (proto/net.h) within a deadline, decide by the sandbox's policy (read
// afresh for each connection), resolve on the host only a name a name rule allows (a lookup is
// a message to the name's DNS servers), check every resolved address again (a name rule never
// admits a loopback, private, link-local or metadata address, nor one of the host's own,
// egress/host_address.h: DNS rebinding; an address that cannot be checked is not connected),
// connect with a timeout, answer NetResult, then copy bytes both ways with flow control (each
// direction reads only when its last read was written), half-closes passed on, until both
// sides are done, the connection is idle too long, or the broker stops. Returns what happened
// for the audit log; never throws.
// A sandbox with secrets bound to hosts (Injection, issue 42): a connection to a host:port one
// is bound to is intercepted (egress/intercept.h) once the host's certificate verifies; one to a
// bound host at another port is a tunnel only if its first byte opens TLS (plain HTTP there is
// refused); the rest are tunnels as above.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "egress/audit.h"
#include "egress/http_rewrite.h"
#include "egress/policy.h"
#include "proto/credd.h"
#include "util/fd.h"

namespace space::egress {

struct ConnLimits {
  int request_ms = 10'000;  // for the guest's NetConnect to arrive
  int connect_ms = 10'000;  // for each address to accept
  int idle_ms = 600'000;    // with no byte either way, the connection is closed
};

// Resolves a host name to its addresses; on failure returns none and sets `error`.
using Resolver = std::function<std::vector<IpAddress>(const std::string& host, std::string& error)>;
// The host's resolver (getaddrinfo, TCP, both families).
std::vector<IpAddress> system_resolve(const std::string& host, std::string& error);
// The policy of the sandbox as it is now; nullopt when it has no network.
using PolicySource = std::function<std::optional<Policy>()>;

// The sandbox's bindings, as the broker reaches them (the credential helper, its CA's files).
struct Injection {
  std::string ca_cert, ca_key;  // the sandbox's CA (cred/sandbox_ca.h)
  std::string trust_file;       // [egress] ca_file ("" = the system's trust store only)
  // The placeholders of the sandbox, and which are bound to host:port. Throws on failure.
  std::function<proto::credd::BindingsReply(const std::string& host, uint16_t port)> bindings;
  // The value of `token` for a request to host:port (a use spent); nullopt when refused.
  std::function<std::optional<SecretString>(const std::string& token, const std::string& host,
                                            uint16_t port, const RequestInfo& r)>
      swap;
};

// Serves the guest connection `guest` (a connected stream socket) for `sandbox`. `stop_fd`
// becoming readable ends the wait at any step. `peer_problem` non-empty refuses the connection
// (it did not come from the sandbox's VMM). Returns the audit record (time_ms and sandbox set).
AuditRecord serve_connection(Fd guest, const std::string& sandbox, const std::string& peer_problem,
                             const PolicySource& policy, const Resolver& resolve,
                             const ConnLimits& limits, int stop_fd,
                             const Injection* injection = nullptr);

}  // namespace space::egress
