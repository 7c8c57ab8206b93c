// Forwarded connections into the guest; see forward_session.h.
#include "forward_session.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "util/relay.h"

namespace space::guest {

namespace {

// A loopback connect fails at once when nothing listens; it waits only while the server's
// accept queue is full (its SYN dropped and sent again after 1, 3, 7, 15, 31 s...). A server
// that forks per connection is slow in a loaded guest, so wait long, but less than the host's
// 120 s for guest-init's answer, so that the client is told why.
constexpr int kConnectTimeoutMs = 90'000;

// A connected socket to 127.0.0.1:port, or an invalid Fd with `why` set.
Fd connect_local(uint16_t port, std::string& why) {
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s) {
    why = std::string("socket: ") + std::strerror(errno);
    return Fd();
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string where = "127.0.0.1:" + std::to_string(port) + " in the guest";
  if (::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (errno != EINPROGRESS) {
      why = where + ": " + std::strerror(errno);
      return Fd();
    }
    pollfd p{s.get(), POLLOUT, 0};
    int n;
    do n = ::poll(&p, 1, kConnectTimeoutMs);
    while (n < 0 && errno == EINTR);
    int err = n == 0 ? ETIMEDOUT : 0;
    socklen_t len = sizeof err;
    if (n > 0) ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      why = where + ": " + std::strerror(err);
      return Fd();
    }
  }
  return s;
}

}  // namespace

void run_forward(Context& ctx, Channel& ch, const proto::ForwardRequest& req) noexcept {
  try {
    proto::NetResult result;
    std::string why;
    Fd local = connect_local(req.port, why);
    if (!local) {
      result.status = 502;
      result.message = why;
      ctx.console.log("forward refused: " + why);
    } else {
      result.address = "127.0.0.1:" + std::to_string(req.port);
    }
    if (!ch.send(proto::Type::NetResult, result.encode()) || !local) return;
    relay(ch.fd(), local.get(), -1, -1);
  } catch (const std::exception& e) {
    ctx.console.log(std::string("forward failed: ") + e.what());
  }
}

}  // namespace space::guest
