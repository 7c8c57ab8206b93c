// util/relay: bytes both ways with their counts, EOF passed on as a half-close, the idle limit,
// the stop descriptor, and a slow reader that must not make the relay buffer without bound.
#include <doctest/doctest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <string>
#include <thread>

#include "support/socket_pair.h"
#include "util/fd.h"
#include "util/relay.h"

using namespace space;

namespace {
using Pair = test::SocketPair;

std::string drain(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out;
    out.append(buf, size_t(n));
  }
}
}  // namespace

TEST_CASE("relay copies both ways, passes EOF on and counts the bytes") {
  Pair left, right;  // client <-> left.b | relay | right.a <-> server
  auto done =
      std::async(std::launch::async, [&] { return relay(left.b.get(), right.a.get(), -1, -1); });
  std::string up(300'000, 'u'), down(200'000, 'd');
  std::thread client([&] {
    REQUIRE(::send(left.a.get(), up.data(), up.size(), MSG_NOSIGNAL) == ssize_t(up.size()));
    ::shutdown(left.a.get(), SHUT_WR);
  });
  std::thread server([&] {
    REQUIRE(::send(right.b.get(), down.data(), down.size(), MSG_NOSIGNAL) == ssize_t(down.size()));
    ::shutdown(right.b.get(), SHUT_WR);
  });
  std::string at_server = drain(right.b.get());
  std::string at_client = drain(left.a.get());
  client.join();
  server.join();
  RelayResult r = done.get();
  CHECK(at_server == up);
  CHECK(at_client == down);
  CHECK(r.a_to_b == up.size());
  CHECK(r.b_to_a == down.size());
  CHECK(r.ended.empty());
}

TEST_CASE("relay ends when idle, or when stop_fd is readable") {
  Pair left, right;
  SUBCASE("idle") {
    RelayResult r = relay(left.b.get(), right.a.get(), 100, -1);
    CHECK(r.ended.find("idle") != std::string::npos);
  }
  SUBCASE("stop") {
    Fd stop(::eventfd(0, EFD_CLOEXEC));
    auto done = std::async(std::launch::async,
                           [&] { return relay(left.b.get(), right.a.get(), -1, stop.get()); });
    REQUIRE(::send(left.a.get(), "abc", 3, MSG_NOSIGNAL) == 3);
    char buf[3];
    REQUIRE(::recv(right.b.get(), buf, 3, MSG_WAITALL) == 3);
    uint64_t one = 1;
    REQUIRE(::write(stop.get(), &one, sizeof one) == 8);
    RelayResult r = done.get();
    CHECK(r.ended == "stopped");
    CHECK(r.a_to_b == 3);
  }
}

TEST_CASE("a reader that does not read stops its writer, not the relay's memory") {
  Pair left, right;
  int small = 16 * 1024;
  for (int fd : {left.a.get(), left.b.get(), right.a.get(), right.b.get()}) {
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  }
  Fd stop(::eventfd(0, EFD_CLOEXEC));
  auto done = std::async(std::launch::async,
                         [&] { return relay(left.b.get(), right.a.get(), -1, stop.get()); });
  // The client writes without blocking until the path is full; the server never reads.
  std::string chunk(4096, 'x');
  size_t sent = 0;
  for (int i = 0; i < 2000; i++) {
    ssize_t n = ::send(left.a.get(), chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) {
      ::usleep(20'000);
      n = ::send(left.a.get(), chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n <= 0) break;
    }
    sent += size_t(n);
  }
  CHECK(sent < 2000 * chunk.size());  // the client was held back
  uint64_t one = 1;
  REQUIRE(::write(stop.get(), &one, sizeof one) == 8);
  RelayResult r = done.get();
  CHECK(r.a_to_b <= sent);
  CHECK(sent - r.a_to_b <= 65536 + 4 * 65536);  // at most one chunk held, the rest in buffers
}
