// guest-init's Forward request (guest-init/forward_session.h) over a session on a thread of this
// process: after Hello, a Forward to a TCP server on 127.0.0.1 answers ok and carries bytes both
// ways with the half-close passed on; a port nothing listens on answers 502 naming it; a
// malformed request is refused with an Error frame.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "guest-init/context.h"
#include "guest-init/session.h"
#include "proto/agent.h"
#include "proto/net.h"
#include "support/tcp_server.h"

using namespace space;
using namespace space::proto;

namespace {

struct Conn {
  guest::Context ctx;
  Fd host;
  std::thread server;
  Conn() {
    static Fd devnull(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    ctx.console = guest::Console(devnull.get());
    ctx.hostname = "fw";
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    host = Fd(sv[0]);
    server = std::thread(
        [this, fd = Fd(sv[1])]() mutable { guest::serve_connection(std::move(fd), ctx); });
  }
  ~Conn() {
    host.reset();
    server.join();
  }
  void send(Type t, const std::vector<uint8_t>& payload) {
    auto b = encode_frame(t, payload);
    REQUIRE(::send(host.get(), b.data(), b.size(), MSG_NOSIGNAL) == ssize_t(b.size()));
  }
  // One frame, read byte by byte so that nothing after it is consumed.
  Frame frame() {
    FrameDecoder d;
    for (;;) {
      if (auto f = d.next()) return *f;
      uint8_t b;
      REQUIRE(::recv(host.get(), &b, 1, 0) == 1);
      d.feed({&b, 1});
    }
  }
  void open(uint16_t port) {
    Hello h;
    h.client = "test";
    send(Type::Hello, h.encode());
    send(Type::Forward, ForwardRequest{.port = port}.encode());
    REQUIRE(frame().type == Type::HelloReply);
  }
};

}  // namespace

TEST_CASE("Forward connects to 127.0.0.1:PORT in the guest and carries bytes both ways") {
  test::TcpServer echo(test::echo_service, "127.0.0.1");
  Conn c;
  c.open(echo.port);
  Frame f = c.frame();
  REQUIRE(f.type == Type::NetResult);
  auto r = NetResult::decode(f.payload);
  CHECK(r.ok());
  CHECK(r.address == "127.0.0.1:" + std::to_string(echo.port));
  std::string data(200'000, 'f');
  std::thread w([&] {
    REQUIRE(::send(c.host.get(), data.data(), data.size(), MSG_NOSIGNAL) == ssize_t(data.size()));
    ::shutdown(c.host.get(), SHUT_WR);
  });
  CHECK(test::read_all(c.host.get()) == data);
  w.join();
}

TEST_CASE("Forward to a port nothing listens on answers 502 with the reason") {
  // A port on 127.0.0.1 bound and never listened on: connections to it are refused.
  Fd hold(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(hold.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  ::getsockname(hold.get(), reinterpret_cast<sockaddr*>(&a), &len);
  uint16_t port = ntohs(a.sin_port);
  Conn c;
  c.open(port);
  Frame f = c.frame();
  REQUIRE(f.type == Type::NetResult);
  auto r = NetResult::decode(f.payload);
  CHECK(r.status == 502);
  CHECK(r.message == "127.0.0.1:" + std::to_string(port) + " in the guest: Connection refused");
  CHECK(test::read_all(c.host.get()).empty());  // and the connection ends
}

TEST_CASE("a malformed Forward is refused with an Error frame") {
  Conn c;
  Hello h;
  h.client = "test";
  c.send(Type::Hello, h.encode());
  c.send(Type::Forward, {0, 0});
  REQUIRE(c.frame().type == Type::HelloReply);
  Frame f = c.frame();
  REQUIRE(f.type == Type::Error);
  CHECK(ErrorMsg::decode(f.payload).message.find("port 0") != std::string::npos);
}
