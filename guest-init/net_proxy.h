// NetProxy: guest-init's HTTP proxy, the guest's only way out. It listens on 127.0.0.1:3128
// (boot.cpp brought lo up) once a Hello says the sandbox has a network policy; every exec then
// gets HTTP_PROXY and friends from the host. Each client connection is served on its own
// thread: read the request head (proto/http_proxy.h: CONNECT, or an absolute-URI request),
// dial the host's egress port (proto::kEgressPort; the VMM forwards it to the network broker),
// send NetConnect, read NetResult, and either answer the client with the broker's refusal
// (403, 502, 503, 504, as an HTTP response with the reason) or start the tunnel: "200
// Connection established" for CONNECT, the rewritten request head for plain HTTP, then bytes
// both ways (util/relay.h). The guest resolves no names: the broker does, on the host.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "util/fd.h"

namespace space::guest {

struct ProxyOptions {
  uint16_t port = 3128;            // on 127.0.0.1; 0 = any free port (tests)
  std::string egress_unix;         // test mode: the broker's Unix socket ("" = vsock to the host)
  int max_clients = 256;           // more at once are answered 503
  int head_timeout_ms = 30'000;    // for the client's request head
  int broker_timeout_ms = 60'000;  // for the broker's answer (it may try several addresses)
};

class NetProxy {
 public:
  // Starts listening (once: later calls return the first outcome). Returns "" when serving, or
  // why it cannot. Thread-safe.
  std::string ensure(const ProxyOptions& opts);
  // The port it listens on (0 before ensure() succeeded).
  uint16_t port() const { return port_.load(); }
  // Client connections being served.
  int clients() const { return clients_.load(); }

 private:
  void accept_loop(int listener, ProxyOptions opts);
  std::mutex mu_;
  bool tried_ = false;
  std::string outcome_;
  std::atomic<uint16_t> port_{0};
  std::atomic<int> clients_{0};
};

}  // namespace space::guest
