// One guest connection through the broker; see connection.h.
#include "egress/connection.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "egress/host_address.h"
#include "egress/intercept.h"
#include "egress/wait.h"
#include "proto/agent.h"
#include "proto/net.h"
#include "util/error.h"
#include "util/relay.h"
#include "util/timing.h"

namespace space::egress {

namespace {

constexpr size_t kMaxRequestBytes = 4096;  // a NetConnect frame is far smaller

// Sends all of `data` within `ms`; false if the guest is gone or too slow.
bool send_all(int fd, const std::vector<uint8_t>& data, int ms, int stop_fd) {
  int64_t deadline = timing::mono_ms() + ms;
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      off += size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return false;
    if (wait_for(fd, POLLOUT, deadline, stop_fd) != Wait::Ready) return false;
  }
  return true;
}

// Reads the guest's NetConnect. Sets `why` (and returns nullopt) when it is malformed, late or
// never comes.
std::optional<proto::NetConnect> read_request(int fd, int ms, int stop_fd, std::string& why) {
  int64_t deadline = timing::mono_ms() + ms;
  proto::FrameDecoder dec;
  uint8_t buf[1024];
  for (;;) {
    try {
      if (auto f = dec.next()) {
        if (f->type != proto::Type::NetConnect) {
          why = "unexpected frame type " + std::to_string(int(f->type));
          return std::nullopt;
        }
        return proto::NetConnect::decode(f->payload);
      }
    } catch (const proto::ProtoError& e) {
      why = std::string("malformed request: ") + e.what();
      return std::nullopt;
    }
    if (dec.buffered() > kMaxRequestBytes) {
      why = "request too large";
      return std::nullopt;
    }
    Wait w = wait_for(fd, POLLIN, deadline, stop_fd);
    if (w != Wait::Ready) {
      why = w == Wait::Stopped ? "the broker is stopping" : "no request within the time limit";
      return std::nullopt;
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) {
      why = "the guest closed the connection before its request";
      return std::nullopt;
    }
    try {
      dec.feed({buf, size_t(n)});
    } catch (const proto::ProtoError& e) {
      why = std::string("malformed request: ") + e.what();
      return std::nullopt;
    }
  }
}

// Whether the first byte the guest sends on `fd` (peeked, left for the relay) opens a TLS
// handshake record (0x16), within `ms`.
bool starts_with_tls(int fd, int ms, int stop_fd) {
  if (wait_for(fd, POLLIN, timing::mono_ms() + ms, stop_fd) != Wait::Ready) return false;
  unsigned char b = 0;
  ssize_t n;
  do {
    n = ::recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  return n == 1 && b == 0x16;
}

std::string with_port(const IpAddress& a, uint16_t port) {
  std::string s = a.to_string();
  if (a.family() == AF_INET6) s = "[" + s + "]";
  return s + ":" + std::to_string(port);
}

// Connects to addr:port within `ms`. Returns the socket, or an invalid Fd with `why` and
// `status` (502 refused/unreachable, 504 timeout) set.
Fd connect_to(const IpAddress& addr, uint16_t port, int ms, int stop_fd, std::string& why,
              uint16_t& status) {
  sockaddr_storage ss{};
  socklen_t len = addr.to_sockaddr(port, ss);
  Fd s(::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s) {
    why = std::string("socket: ") + std::strerror(errno);
    status = 502;
    return Fd();
  }
  if (::connect(s.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
    why = "connect to " + with_port(addr, port) + ": " + std::strerror(errno);
    status = 502;
    return Fd();
  }
  Wait w = wait_for(s.get(), POLLOUT, timing::mono_ms() + ms, stop_fd);
  if (w != Wait::Ready) {
    why = w == Wait::Stopped ? "the broker is stopping"
                             : "connect to " + with_port(addr, port) + ": timed out";
    status = 504;
    return Fd();
  }
  int err = 0;
  socklen_t elen = sizeof err;
  ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &elen);
  if (err != 0) {
    why = "connect to " + with_port(addr, port) + ": " + std::strerror(err);
    status = err == ETIMEDOUT ? 504 : 502;
    return Fd();
  }
  return s;
}

}  // namespace

std::vector<IpAddress> system_resolve(const std::string& host, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  std::vector<IpAddress> out;
  if (rc != 0) {
    error = rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc);
    return out;
  }
  for (addrinfo* a = res; a; a = a->ai_next) {
    auto ip = IpAddress::from_sockaddr(a->ai_addr);
    if (ip && std::find(out.begin(), out.end(), *ip) == out.end()) out.push_back(*ip);
  }
  ::freeaddrinfo(res);
  if (out.empty()) error = "no address";
  return out;
}

namespace {

// One connection on its way through the checks: the guest's request, what each step decided,
// and the audit record. The first refusal sets `result`; later steps see !ok() and do nothing.
struct Attempt {
  AuditRecord rec;
  proto::NetResult result;
  std::optional<proto::NetConnect> req;
  std::optional<Policy> pol;
  std::optional<std::string> host;  // the request's host, normalized
  std::optional<proto::credd::BindingsReply> bindings;
  bool intercept_here = false;  // a secret is bound to this host:port
  Fd remote;

  bool ok() const { return req && result.ok(); }
  // `kind`: a fixed label the audit log counts refusals under (egress/audit.h).
  void refuse(uint16_t status, const std::string& decision, const std::string& kind,
              const std::string& why) {
    rec.decision = decision;
    rec.kind = kind;
    rec.reason = why;
    result.status = status;
    result.message = why;
  }
};

// The checks that need no address: who asks, the policy, the host's name, the sandbox's bindings.
void check_request(Attempt& a, const std::string& sandbox, const std::string& peer_problem,
                   const PolicySource& policy, const Injection* injection) {
  if (a.ok() && !peer_problem.empty())
    a.refuse(403, "deny", "not from the sandbox's VMM", peer_problem);
  if (a.ok()) {
    try {
      a.pol = policy();
    } catch (const std::exception& e) {
      a.refuse(503, "error", "policy unreadable",
               std::string("the sandbox's policy cannot be read: ") + e.what());
    }
    if (a.ok() && !a.pol)
      a.refuse(403, "deny", "no network",
               "sandbox " + sandbox + " has no network (space net allow " + sandbox +
                   " RULE gives it some)");
  }
  if (a.ok()) {
    a.host = normalize_host(a.req->host);
    if (!a.host)
      a.refuse(400, "error", "invalid host name", "invalid host name \"" + a.req->host + "\"");
  }
  if (a.ok()) {
    Decision d = a.pol->precheck(*a.host, a.req->port);
    if (!d.allow) a.refuse(403, "deny", "not allowed by the policy", d.reason);
  }
  // The sandbox's bindings: intercept a bound host:port; refuse the bound host elsewhere.
  if (a.ok() && injection) {
    try {
      a.bindings = injection->bindings(*a.host, a.req->port);
      for (const auto& b : a.bindings->placeholders) a.intercept_here = a.intercept_here || b.bound;
    } catch (const std::exception& e) {
      a.refuse(503, "error", "bindings unreadable",
               std::string("the sandbox's bindings cannot be read: ") + e.what());
    }
  }
}

// Resolves the host and connects to the first of its addresses the policy allows.
void connect_remote(Attempt& a, const Resolver& resolve, const ConnLimits& limits, int stop_fd) {
  if (!a.ok()) return;
  const std::string& host = *a.host;
  const uint16_t port = a.req->port;
  std::vector<IpAddress> addrs;
  if (auto lit = IpAddress::parse(host)) {
    addrs.push_back(*lit);
  } else {
    std::string err;
    addrs = resolve(host, err);
    if (addrs.empty())
      a.refuse(502, "error", "cannot resolve", "cannot resolve " + host + ": " + err);
  }
  std::string denial, failure;
  uint16_t fail_status = 502;
  for (const auto& addr : addrs) {
    Decision d;
    try {
      d = a.pol->check(host, addr, port, classify_at_host);
    } catch (const Error& e) {  // cannot tell whether it is ours: not connected
      if (failure.empty())
        failure = "cannot tell whether " + addr.to_string() +
                  " is one of this host's own addresses: " + e.what();
      fail_status = 503;
      continue;
    }
    if (!d.allow) {
      if (denial.empty()) denial = d.reason;
      continue;
    }
    a.rec.rule = d.rule;
    a.remote = connect_to(addr, port, limits.connect_ms, stop_fd, failure, fail_status);
    if (a.remote) {
      a.rec.address = with_port(addr, port);
      break;
    }
  }
  if (!a.remote && a.result.ok()) {
    if (!failure.empty())
      a.refuse(fail_status, "error", "cannot connect", failure);
    else
      a.refuse(403, "deny", "address not allowed", denial);
  }
}

// A bound host: TLS with it, its certificate verified before the guest is told the tunnel is
// open. Fills `iopts` for the interception; placeholders sent unbound are added to `strays`.
SslPtr open_interception(Attempt& a, const Injection& injection, const ConnLimits& limits,
                         int stop_fd, InterceptOptions& iopts, std::vector<std::string>& strays) {
  iopts.host = *a.host;
  iopts.ca_cert = injection.ca_cert;
  iopts.ca_key = injection.ca_key;
  iopts.trust_file = injection.trust_file;
  for (const auto& b : a.bindings->placeholders)
    iopts.placeholders.push_back({b.token, b.name, b.bound});
  const uint16_t port = a.req->port;
  const std::string h = *a.host;
  const Injection* inj = &injection;
  iopts.resolve = [inj, h, port](const Placeholder& p, const RequestInfo& r) {
    return inj->swap(p.token, h, port, r);
  };
  iopts.stray = [&strays](const Placeholder& p, const RequestInfo&) { strays.push_back(p.name); };
  iopts.handshake_ms = limits.connect_ms;
  iopts.idle_ms = limits.idle_ms;
  iopts.stop_fd = stop_fd;
  std::string why;
  SslPtr upstream = upstream_handshake(a.remote.get(), iopts, why);
  if (!upstream)
    a.refuse(502, "deny", "the bound host's TLS refused",
             "TLS with " + *a.host + " (a secret is bound to it) failed: " + why);
  return upstream;
}

// The connection once the guest was told it is open: intercepted, refused in clear text toward a
// bound host, or relayed as an opaque tunnel.
void carry(Attempt& a, int guest, SslPtr upstream, const InterceptOptions& iopts,
           const std::vector<std::string>& strays, const ConnLimits& limits, int stop_fd) {
  if (upstream) {
    InterceptResult ir = intercept(guest, a.remote.get(), std::move(upstream), iopts);
    a.rec.bytes_out = ir.bytes_out;
    a.rec.bytes_in = ir.bytes_in;
    a.rec.reason = "intercepted: " + std::to_string(ir.requests) + " requests, " +
                   std::to_string(ir.swaps) + " swaps; " + ir.ended;
    for (const auto& n : strays)
      a.rec.reason += "; a placeholder of " + n + " went out unswapped (not bound here)";
    if (ir.refused) a.rec.kind = "interception refused";
  } else if (a.bindings && a.bindings->elsewhere &&
             !starts_with_tls(guest, limits.request_ms, stop_fd)) {
    // A bound host at another port is a tunnel like any other, but only for TLS: a request in
    // clear text (plain HTTP) to a host a secret is bound to is refused, placeholder and all.
    a.rec.decision = "deny";
    a.rec.kind = "plain HTTP to a bound host";
    a.rec.reason = *a.host + " has a secret bound to it: a connection to port " +
                   std::to_string(a.req->port) +
                   " that does not start with TLS is refused (use https:// at the bound port)";
  } else {
    RelayResult r = relay(guest, a.remote.get(), limits.idle_ms, stop_fd);
    a.rec.bytes_out = r.a_to_b;
    a.rec.bytes_in = r.b_to_a;
    a.rec.reason = r.ended;
  }
}

}  // namespace

AuditRecord serve_connection(Fd guest, const std::string& sandbox, const std::string& peer_problem,
                             const PolicySource& policy, const Resolver& resolve,
                             const ConnLimits& limits, int stop_fd, const Injection* injection) {
  Attempt a;
  a.rec.time_ms = timing::wall_ms();
  a.rec.sandbox = sandbox;
  int64_t start = timing::mono_ms();
  std::string why;
  a.req = read_request(guest.get(), limits.request_ms, stop_fd, why);
  if (!a.req) {
    a.refuse(400, "error", "malformed or missing request", why);
  } else {
    a.rec.host = a.req->host;
    a.rec.port = a.req->port;
  }
  check_request(a, sandbox, peer_problem, policy, injection);
  connect_remote(a, resolve, limits, stop_fd);
  InterceptOptions iopts;
  SslPtr upstream;
  std::vector<std::string> strays;  // outlives the interception, which adds to it
  if (a.ok() && a.intercept_here)
    upstream = open_interception(a, *injection, limits, stop_fd, iopts, strays);
  if (a.ok()) {
    a.rec.decision = "allow";
    a.result.address = a.rec.address;
  }
  bool sent = send_all(guest.get(), proto::encode_frame(proto::Type::NetResult, a.result.encode()),
                       limits.request_ms, stop_fd);
  if (a.ok() && sent)
    carry(a, guest.get(), std::move(upstream), iopts, strays, limits, stop_fd);
  else if (a.ok())
    a.rec.reason = "the guest went away before the result";
  a.rec.duration_ms = uint64_t(timing::mono_ms() - start);
  return a.rec;
}

}  // namespace space::egress
