// `space forward ID [ADDR:]HOST_PORT:GUEST_PORT...`: port forwarding into a sandbox, in the
// foreground like kubectl port-forward. It listens on ADDR:HOST_PORT (127.0.0.1 by default;
// HOST_PORT 0 picks a free port) and carries each accepted connection to 127.0.0.1:GUEST_PORT in
// the guest: a fresh agent connection (vsock port 1024) per client, Hello and a Forward request
// (proto/net.h), guest-init's answer, then bytes both ways (util/relay.h) on a thread of its
// own. A guest port where nothing listens closes that client (and says so on stderr); the
// forward goes on. It ends on SIGINT, SIGTERM or SIGHUP, or when the sandbox stops running,
// closing every connection it carried. It needs no network policy: the host dials in.
// A TCP listener on 127.0.0.1 is open to every local user; `--unix PATH:GUEST_PORT` listens on a
// Unix socket of mode 0600 instead (only its owner, and root, can connect), removed at the end.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "store/context.h"
#include "util/socket.h"

namespace space::ops {

struct ForwardSpec {
  std::string address = "127.0.0.1";  // an IPv4 or IPv6 literal to listen on
  uint16_t host_port = 0;             // 0: any free port
  uint16_t guest_port = 0;            // 1..65535
  std::string unix_path;              // set: listen on this Unix socket instead (address unused)
  bool operator==(const ForwardSpec&) const = default;
};

// "[ADDR:]HOST_PORT:GUEST_PORT", ADDR an IPv4 literal, "localhost" or "[IPv6]". Throws Error
// naming the spec and the accepted forms.
ForwardSpec parse_forward_spec(std::string_view text);
// "PATH:GUEST_PORT" of --unix (the last ':' separates; PATH made absolute). Throws Error naming
// the spec and the form.
ForwardSpec parse_unix_forward_spec(std::string_view text);
// The listener of `spec`: a TCP socket (the port chosen is written back) or a Unix socket of mode
// 0600 (replacing a stale socket file; its inode kept so that only it is removed later).
net::Listener listen_forward(ForwardSpec& spec);

struct ForwardOptions {
  std::vector<ForwardSpec> specs;
  int max_connections = 256;  // at once, over all specs; more are closed at once
  // Called once per spec when it listens, with "ADDR:PORT -> GUEST_PORT" (the port chosen).
  std::function<void(const std::string&)> on_listening;
  // Called for each connection that could not be carried, with why.
  std::function<void(const std::string&)> on_error;
};

// Forwards until a signal or the sandbox stops; returns why it stopped ("interrupted by SIGINT",
// "sandbox ID is no longer running"). Throws when the sandbox is not running or a listener
// cannot be opened.
std::string forward_ports(const store::Context& ctx, const std::string& id,
                          const ForwardOptions& opts);

}  // namespace space::ops
