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

AuditRecord serve_connection(Fd guest, const std::string& sandbox, const std::string& peer_problem,
                             const PolicySource& policy, const Resolver& resolve,
                             const ConnLimits& limits, int stop_fd, const Injection* injection) {
  AuditRecord rec;
  rec.time_ms = timing::wall_ms();
  rec.sandbox = sandbox;
  int64_t start = timing::mono_ms();
  proto::NetResult result;
  // `kind`: a fixed label the audit log counts refusals under (egress/audit.h).
  auto refuse = [&](uint16_t status, const std::string& decision, const std::string& kind,
                    const std::string& why) {
    rec.decision = decision;
    rec.kind = kind;
    rec.reason = why;
    result.status = status;
    result.message = why;
  };
  Fd remote;
  std::string why;
  std::optional<proto::NetConnect> req = read_request(guest.get(), limits.request_ms, stop_fd, why);
  if (!req) {
    refuse(400, "error", "malformed or missing request", why);
  } else {
    rec.host = req->host;
    rec.port = req->port;
  }
  std::optional<Policy> pol;
  std::optional<std::string> host;
  if (req && !peer_problem.empty()) refuse(403, "deny", "not from the sandbox's VMM", peer_problem);
  if (req && result.ok()) {
    try {
      pol = policy();
    } catch (const std::exception& e) {
      refuse(503, "error", "policy unreadable",
             std::string("the sandbox's policy cannot be read: ") + e.what());
    }
    if (result.ok() && !pol)
      refuse(403, "deny", "no network",
             "sandbox " + sandbox + " has no network (space net allow " + sandbox +
                 " RULE gives it some)");
  }
  if (req && result.ok()) {
    host = normalize_host(req->host);
    if (!host) refuse(400, "error", "invalid host name", "invalid host name \"" + req->host + "\"");
  }
  if (req && result.ok()) {
    Decision d = pol->precheck(*host, req->port);
    if (!d.allow) refuse(403, "deny", "not allowed by the policy", d.reason);
  }
  // The sandbox's bindings: intercept a bound host:port; refuse the bound host elsewhere.
  std::optional<proto::credd::BindingsReply> bindings;
  bool intercept_here = false;
  if (req && result.ok() && injection) {
    try {
      bindings = injection->bindings(*host, req->port);
      for (const auto& b : bindings->placeholders) intercept_here = intercept_here || b.bound;
    } catch (const std::exception& e) {
      refuse(503, "error", "bindings unreadable",
             std::string("the sandbox's bindings cannot be read: ") + e.what());
    }
  }
  if (req && result.ok()) {
    std::vector<IpAddress> addrs;
    if (auto lit = IpAddress::parse(*host)) {
      addrs.push_back(*lit);
    } else {
      std::string err;
      addrs = resolve(*host, err);
      if (addrs.empty())
        refuse(502, "error", "cannot resolve", "cannot resolve " + *host + ": " + err);
    }
    std::string denial, failure;
    uint16_t fail_status = 502;
    for (const auto& a : addrs) {
      Decision d;
      try {
        d = pol->check(*host, a, req->port, classify_at_host);
      } catch (const Error& e) {  // cannot tell whether it is ours: not connected
        if (failure.empty())
          failure = "cannot tell whether " + a.to_string() +
                    " is one of this host's own addresses: " + e.what();
        fail_status = 503;
        continue;
      }
      if (!d.allow) {
        if (denial.empty()) denial = d.reason;
        continue;
      }
      rec.rule = d.rule;
      remote = connect_to(a, req->port, limits.connect_ms, stop_fd, failure, fail_status);
      if (remote) {
        rec.address = with_port(a, req->port);
        break;
      }
    }
    if (!remote && result.ok()) {
      if (!failure.empty())
        refuse(fail_status, "error", "cannot connect", failure);
      else
        refuse(403, "deny", "address not allowed", denial);
    }
  }
  // A bound host: its certificate must verify before the guest is told the tunnel is open.
  InterceptOptions iopts;
  SslPtr upstream;
  std::vector<std::string> strays;
  if (result.ok() && intercept_here) {
    iopts.host = *host;
    iopts.ca_cert = injection->ca_cert;
    iopts.ca_key = injection->ca_key;
    iopts.trust_file = injection->trust_file;
    for (const auto& b : bindings->placeholders)
      iopts.placeholders.push_back({b.token, b.name, b.bound});
    const uint16_t port = req->port;
    const std::string h = *host;
    iopts.resolve = [injection, h, port](const Placeholder& p, const RequestInfo& r) {
      return injection->swap(p.token, h, port, r);
    };
    iopts.stray = [&strays](const Placeholder& p, const RequestInfo&) { strays.push_back(p.name); };
    iopts.handshake_ms = limits.connect_ms;
    iopts.idle_ms = limits.idle_ms;
    iopts.stop_fd = stop_fd;
    std::string why;
    upstream = upstream_handshake(remote.get(), iopts, why);
    if (!upstream)
      refuse(502, "deny", "the bound host's TLS refused",
             "TLS with " + *host + " (a secret is bound to it) failed: " + why);
  }
  if (result.ok()) {
    rec.decision = "allow";
    result.address = rec.address;
  }
  bool sent = send_all(guest.get(), proto::encode_frame(proto::Type::NetResult, result.encode()),
                       limits.request_ms, stop_fd);
  if (result.ok() && sent && upstream) {
    InterceptResult ir = intercept(guest.get(), remote.get(), std::move(upstream), iopts);
    rec.bytes_out = ir.bytes_out;
    rec.bytes_in = ir.bytes_in;
    rec.reason = "intercepted: " + std::to_string(ir.requests) + " requests, " +
                 std::to_string(ir.swaps) + " swaps; " + ir.ended;
    for (const auto& n : strays)
      rec.reason += "; a placeholder of " + n + " went out unswapped (not bound here)";
    if (ir.refused) rec.kind = "interception refused";
  } else if (result.ok() && sent && bindings && bindings->elsewhere &&
             !starts_with_tls(guest.get(), limits.request_ms, stop_fd)) {
    // A bound host at another port is a tunnel like any other, but only for TLS: a request in
    // clear text (plain HTTP) to a host a secret is bound to is refused, placeholder and all.
    rec.decision = "deny";
    rec.kind = "plain HTTP to a bound host";
    rec.reason = *host + " has a secret bound to it: a connection to port " +
                 std::to_string(req->port) +
                 " that does not start with TLS is refused (use https:// at the bound port)";
  } else if (result.ok() && sent) {
    RelayResult r = relay(guest.get(), remote.get(), limits.idle_ms, stop_fd);
    rec.bytes_out = r.a_to_b;
    rec.bytes_in = r.b_to_a;
    rec.reason = r.ended;
  } else if (result.ok()) {
    rec.reason = "the guest went away before the result";
  }
  rec.duration_ms = uint64_t(timing::mono_ms() - start);
  return rec;
}

}  // namespace space::egress
