// Unit tests for core/agent_client against fake vsock.sock servers: the CONNECT/OK dial (a
// closed connection is ECONNRESET, which the boot wait retries; another reply is not), frames
// read whole or not at all, the Hello we send (fresh entropy, the host's time, the sandbox id)
// and every way the handshake reply can be refused.
#include <doctest/doctest.h>
#include <errno.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "agent/client.h"
#include "proto/agent.h"
#include "support/fake_server.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/socket.h"

using namespace space;
using space::test::FakeServer;
using space::test::read_line_blocking;
using space::test::write_str;

namespace {

net::Deadline soon() {
  return net::Deadline::after_ms(2000);
}

void send_frame(int fd, proto::Type t, const std::vector<uint8_t>& payload) {
  auto bytes = proto::encode_frame(t, payload);
  write_all(fd, bytes.data(), bytes.size());
}

uint64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

// The error agent_hello throws when the guest answers the Hello with `reply` (raw bytes).
std::string handshake_error(const std::vector<uint8_t>& reply) {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  Fd host(sv[0]), guest(sv[1]);
  write_all(guest.get(), reply.data(), reply.size());
  ::shutdown(guest.get(), SHUT_WR);  // and then nothing more (the Hello can still be sent)
  try {
    agent::agent_hello(host.get(), soon());
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("handshake accepted");
  return "";
}

}  // namespace

TEST_CASE("vsock_dial: CONNECT <port>, then OK; a closed connection is ECONNRESET") {
  std::mutex mu;
  std::vector<std::string> lines;
  FakeServer srv([&](int fd, int n) {
    {
      std::lock_guard lock(mu);
      lines.push_back(read_line_blocking(fd));
    }
    if (n == 1) return;  // nobody listening in the guest: closed
    if (n == 2) write_str(fd, "NOPE\n");
    if (n == 3) write_str(fd, "OK 1073741824\nafter");
    ::usleep(100'000);  // let the client read before this end closes
  });
  try {
    agent::vsock_dial(srv.path, 1024, soon());
    FAIL("dialed");
  } catch (const Error& e) {
    CHECK(e.err() == ECONNRESET);
    CHECK(std::string(e.what()).find("connect to guest port 1024") != std::string::npos);
  }
  try {
    agent::vsock_dial(srv.path, 77, soon());
    FAIL("dialed");
  } catch (const Error& e) {
    CHECK(e.err() == 0);  // not retryable
    CHECK(std::string(e.what()) == "connect to guest port 77: unexpected reply \"NOPE\"");
  }
  Fd fd = agent::vsock_dial(srv.path, 4294967294u, soon());
  char rest[8] = {};
  CHECK(::read(fd.get(), rest, 5) == 5);  // what follows the OK line is left for the caller
  CHECK(std::string(rest) == "after");
  fd.reset();
  std::lock_guard lock(mu);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "CONNECT 1024");
  CHECK(lines[1] == "CONNECT 77");
  CHECK(lines[2] == "CONNECT 4294967294");
}

TEST_CASE("read_frame: whole frames, EOF only at a frame boundary, malformed headers refused") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  Fd a(sv[0]), b(sv[1]);
  agent::write_frame(a.get(), proto::Type::Stdout, std::vector<uint8_t>{1, 2, 3}, soon());
  agent::write_frame(a.get(), proto::Type::Ack, {}, soon());
  auto f = agent::read_frame(b.get(), soon());
  REQUIRE(f);
  CHECK(f->type == proto::Type::Stdout);
  CHECK(f->payload == std::vector<uint8_t>{1, 2, 3});
  f = agent::read_frame(b.get(), soon());
  REQUIRE(f);
  CHECK(f->type == proto::Type::Ack);
  CHECK(f->payload.empty());
  std::vector<uint8_t> big(proto::kMaxPayload + 1);
  CHECK_THROWS_WITH_AS(agent::write_frame(b.get(), proto::Type::Stdout, big, soon()),
                       doctest::Contains("encode frame"), Error);
  a.reset();
  CHECK_FALSE(agent::read_frame(b.get(), soon()).has_value());  // EOF at a boundary

  // The error read_frame throws when the peer sends `bytes` and closes.
  auto error_after = [](std::vector<uint8_t> bytes) -> std::string {
    int p[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) == 0);
    Fd w(p[0]), r(p[1]);
    write_all(w.get(), bytes.data(), bytes.size());
    w.reset();
    try {
      agent::read_frame(r.get(), soon());
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(error_after({10, 0, 0, 0, 1, 0, 0, 0}) == "connection closed inside a frame");
  CHECK(error_after({10, 0, 0, 0, 1, 0, 0, 0, 'x'}).find("connection closed") != std::string::npos);
  CHECK(error_after({10, 0, 0}).find("connection closed") != std::string::npos);  // mid-header
  CHECK(error_after({0, 0, 0, 0, 1, 0, 1, 0}).find("malformed frame from the guest") == 0);
  CHECK(error_after({0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0}).find("malformed frame from the guest") ==
        0);
}

TEST_CASE("make_hello: fresh entropy, the host's time and the sandbox id") {
  uint64_t before = now_ns();
  auto h = agent::make_hello("box-1");
  uint64_t after = now_ns();
  auto h2 = agent::make_hello();
  CHECK(h.client == "space");
  CHECK(h.sandbox == "box-1");
  CHECK(h2.sandbox.empty());
  CHECK(h.version == proto::kVersion);
  CHECK(h.time_ns >= before);
  CHECK(h.time_ns <= after);
  CHECK(h.entropy != h2.entropy);
  CHECK(std::any_of(h.entropy.begin(), h.entropy.end(), [](uint8_t x) { return x != 0; }));
}

TEST_CASE("agent_hello: a HelloReply of our version, or an error saying what came instead") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  Fd host(sv[0]), guest(sv[1]);
  proto::HelloReply ok;
  ok.agent = "guest-init 9";
  ok.hostname = "hx";
  send_frame(guest.get(), proto::Type::HelloReply, ok.encode());
  auto r = agent::agent_hello(host.get(), soon());
  CHECK(r.agent == "guest-init 9");
  CHECK(r.hostname == "hx");
  auto sent = agent::read_frame(guest.get(), soon());  // what the guest received
  REQUIRE(sent);
  CHECK(sent->type == proto::Type::Hello);
  CHECK(proto::Hello::decode(sent->payload).client == "space");

  CHECK(handshake_error(proto::encode_frame(proto::Type::Error,
                                            proto::ErrorMsg{.message = "go away"}.encode())) ==
        "guest agent refused the handshake: go away");
  CHECK(handshake_error(proto::encode_frame(proto::Type::Ack, std::vector<uint8_t>{})) ==
        "guest agent answered the handshake with frame type " +
            std::to_string(static_cast<unsigned>(proto::Type::Ack)));
  proto::HelloReply other = ok;
  other.version = proto::kVersion + 1;
  CHECK(handshake_error(proto::encode_frame(proto::Type::HelloReply, other.encode())) ==
        "guest agent speaks protocol version " + std::to_string(proto::kVersion + 1) +
            ", expected " + std::to_string(proto::kVersion));
  CHECK(handshake_error(proto::encode_frame(proto::Type::HelloReply, std::vector<uint8_t>{1, 0}))
            .find("malformed handshake reply from the guest") == 0);
  CHECK(handshake_error({}).find("closed the connection during the handshake") !=
        std::string::npos);
}
