// guest-init's HTTP proxy; see net_proxy.h.
#include "net_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "cred_fetch.h"
#include "proto/agent.h"
#include "proto/http_proxy.h"
#include "proto/net.h"
#include "util/relay.h"

namespace space::guest {

namespace {

constexpr size_t kMaxResultPayload = 4096;

bool send_text(int fd, const std::string& s, int64_t deadline) {
  std::string why;
  return send_all_by(fd, s.data(), s.size(), deadline, why);
}

// Reads the client's request head. Returns the parse (Bad with a status on timeout or EOF).
proto::ProxyParse read_head(int fd, std::string& buf, int timeout_ms) {
  int64_t deadline = mono_ms() + timeout_ms;
  char chunk[4096];
  for (;;) {
    proto::ProxyParse p = proto::parse_proxy_request(buf);
    if (p.status != proto::ProxyParse::Status::NeedMore) return p;
    int left = int(std::max<int64_t>(deadline - mono_ms(), 0));
    pollfd pf{fd, POLLIN, 0};
    int n = ::poll(&pf, 1, left);
    if (n < 0 && errno == EINTR) continue;
    ssize_t got = n > 0 ? ::recv(fd, chunk, sizeof chunk, 0) : -1;
    if (got <= 0) {
      p.status = proto::ProxyParse::Status::Bad;
      p.http_status = 408;
      p.reason = n == 0 ? "no complete request within the time limit" : "the client went away";
      return p;
    }
    buf.append(chunk, size_t(got));
  }
}

// Asks the broker for host:port over a fresh connection. Returns the connection when the
// broker connected, else an invalid Fd with `result` holding the refusal.
// The host turned the connection away: refused at connect (vsock), or, over a gVisor
// sandbox's Unix socket, where the monitor has already accepted it, reset before any answer.
void refused(proto::NetResult& result, const std::string& why) {
  result.status = 502;
  result.message =
      "the host refused the connection (" + why +
      "): the sandbox has no network (space net allow ID RULE gives it some), or the host's "
      "network broker could not start (its log: <root>/egress/egress.log)";
}

Fd ask_broker(const proto::ProxyRequest& req, const ProxyOptions& opts, proto::NetResult& result) {
  std::string why;
  int64_t deadline = mono_ms() + opts.broker_timeout_ms;
  Fd up = connect_host(proto::kEgressPort, opts.egress_unix, opts.broker_timeout_ms, why);
  auto reset = [&] {
    return why == std::strerror(ECONNRESET) || why == std::strerror(ECONNREFUSED);
  };
  if (!up) {
    result.status = 502;
    result.message = "cannot reach the host's network broker: " + why;
    if (reset()) refused(result, why);
    return Fd();
  }
  auto frame = proto::encode_frame(proto::Type::NetConnect,
                                   proto::NetConnect{.host = req.host, .port = req.port}.encode());
  uint8_t hdr[proto::kHeaderSize];
  if (!send_all_by(up.get(), frame.data(), frame.size(), deadline, why) ||
      !recv_exact_by(up.get(), hdr, sizeof hdr, deadline, why)) {
    result.status = 502;
    result.message = "no answer from the host's network broker: " + why;
    if (reset() || why == std::strerror(EPIPE) || why == "the connection was closed")
      refused(result, why);
    return Fd();
  }
  proto::FrameDecoder dec;
  try {
    uint32_t len =
        uint32_t(hdr[0]) | uint32_t(hdr[1]) << 8 | uint32_t(hdr[2]) << 16 | uint32_t(hdr[3]) << 24;
    if (len > kMaxResultPayload) throw proto::ProtoError("oversized result");
    std::vector<uint8_t> all(hdr, hdr + sizeof hdr);
    all.resize(sizeof hdr + len);
    if (!recv_exact_by(up.get(), all.data() + sizeof hdr, len, deadline, why))
      throw proto::ProtoError(why);
    dec.feed(all);
    auto f = dec.next();
    if (!f || f->type != proto::Type::NetResult) throw proto::ProtoError("unexpected frame");
    result = proto::NetResult::decode(f->payload);
  } catch (const proto::ProtoError& e) {
    result = proto::NetResult{};
    result.status = 502;
    result.message = std::string("a broken answer from the host's network broker: ") + e.what();
    return Fd();
  }
  return result.ok() ? std::move(up) : Fd();
}

void serve_client(Fd client, ProxyOptions opts) {
  std::string buf;
  proto::ProxyParse p = read_head(client.get(), buf, opts.head_timeout_ms);
  int64_t deadline = mono_ms() + opts.head_timeout_ms;
  if (p.status != proto::ProxyParse::Status::Ok) {
    send_text(client.get(), proto::proxy_response(p.http_status, p.reason), deadline);
    return;
  }
  const proto::ProxyRequest& req = p.request;
  proto::NetResult result;
  Fd up = ask_broker(req, opts, result);
  deadline = mono_ms() + opts.head_timeout_ms;
  if (!up) {
    send_text(client.get(), proto::proxy_response(result.status, result.message), deadline);
    return;
  }
  std::string rest = buf.substr(req.consumed);
  if (req.connect) {
    if (!send_text(client.get(), "HTTP/1.1 200 Connection established\r\n\r\n", deadline)) return;
  } else {
    rest = req.head + rest;
  }
  if (!rest.empty() && !send_text(up.get(), rest, deadline)) return;
  relay(client.get(), up.get(), -1, -1);  // the broker ends idle connections
}

}  // namespace

std::string NetProxy::ensure(const ProxyOptions& opts) {
  std::lock_guard<std::mutex> g(mu_);
  if (tried_) return outcome_;
  tried_ = true;
  Fd l(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(opts.port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (!l || ::setsockopt(l.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(l.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(l.get(), 128) != 0 ||
      ::getsockname(l.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    outcome_ = "proxy on 127.0.0.1:" + std::to_string(opts.port) + ": " + std::strerror(errno);
    return outcome_;
  }
  port_ = ntohs(a.sin_port);
  int fd = l.release();  // the proxy lives as long as guest-init
  std::thread([this, fd, opts] { accept_loop(fd, opts); }).detach();
  return outcome_;
}

void NetProxy::accept_loop(int listener, ProxyOptions opts) {
  for (;;) {
    Fd c(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    if (!c) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      ::usleep(100'000);  // EMFILE and friends: let connections finish
      continue;
    }
    if (clients_.fetch_add(1) >= opts.max_clients) {
      clients_.fetch_sub(1);
      send_text(c.get(),
                proto::proxy_response(503, "too many proxy connections at once (" +
                                               std::to_string(opts.max_clients) + ")"),
                mono_ms() + 1000);
      continue;
    }
    std::thread([this, opts, fd = std::move(c)]() mutable {
      serve_client(std::move(fd), opts);
      clients_.fetch_sub(1);
    }).detach();
  }
}

}  // namespace space::guest
