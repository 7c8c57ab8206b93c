// Unit tests for proto/frame_queue: every frame delivered intact through partial, non-blocking
// sends (reserved and pushed frames mixed, a small socket buffer), a vanished peer reported, and
// an oversized reservation refused.
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <vector>

#include "proto/agent.h"
#include "proto/frame_queue.h"
#include "util/fd.h"

using namespace space::proto;

TEST_CASE("FrameQueue delivers every frame intact through partial, non-blocking sends") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  space::Fd tx(sv[0]), rx(sv[1]);
  int small = 4096;
  ::setsockopt(tx.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  std::mt19937 rng(42);
  FrameQueue q;
  std::vector<std::vector<uint8_t>> sent;
  FrameDecoder dec;
  std::vector<Frame> got;
  std::vector<uint8_t> buf(7000);
  auto drain_some = [&] {
    ssize_t n = ::recv(rx.get(), buf.data(), rng() % buf.size() + 1, MSG_DONTWAIT);
    if (n > 0) {
      dec.feed({buf.data(), static_cast<size_t>(n)});
      while (auto f = dec.next()) got.push_back(std::move(*f));
    }
  };
  for (int i = 0; i < 3000; i++) {
    std::vector<uint8_t> payload(rng() % 3 == 0 ? rng() % 70000 : rng() % 100);
    for (auto& c : payload) c = static_cast<uint8_t>(rng());
    if (rng() % 2) {
      size_t cap = payload.size() + rng() % (kMaxPayload - payload.size());  // often far bigger
      uint8_t* p = q.reserve(cap);
      std::copy(payload.begin(), payload.end(), p);
      q.commit(Type::Stdout, payload.size());
    } else {
      q.push(Type::Stderr, payload);
    }
    sent.push_back(payload);
    REQUIRE(q.flush(tx.get()));
    drain_some();
  }
  while (!q.empty()) {
    REQUIRE(q.flush(tx.get()));
    drain_some();
  }
  while (got.size() < sent.size()) {
    pollfd p{rx.get(), POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) break;
    drain_some();
  }
  REQUIRE(got.size() == sent.size());
  for (size_t i = 0; i < sent.size(); i++) CHECK(got[i].payload == sent[i]);
  CHECK(q.bytes() == 0);
}

TEST_CASE("FrameQueue::flush reports a vanished peer") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  space::Fd tx(sv[0]), rx(sv[1]);
  rx.reset();
  FrameQueue q;
  q.push(Type::Stdout, std::vector<uint8_t>(10, 1));
  CHECK_FALSE(q.flush(tx.get()));
  CHECK_THROWS_AS(q.reserve(kMaxPayload + 1), ProtoError);
}

TEST_CASE(
    "FrameQueue: bytes() counts headers, one flush sends more frames than one sendmsg gathers, a "
    "full socket is no failure") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  space::Fd tx(sv[0]), rx(sv[1]);
  FrameQueue q;
  CHECK(q.empty());
  CHECK(q.bytes() == 0);
  for (int i = 0; i < 100; i++) q.push(Type::Stdout, std::vector<uint8_t>{static_cast<uint8_t>(i)});
  uint8_t* p = q.reserve(kMaxPayload);  // a big buffer, a short read into it
  p[0] = 'z';
  q.commit(Type::Stderr, 1);
  q.push(Type::Exit);
  CHECK(q.bytes() == 102 * kHeaderSize + 101);
  REQUIRE(q.flush(tx.get()));
  CHECK(q.empty());
  CHECK(q.bytes() == 0);
  FrameDecoder dec;
  std::vector<Frame> got;
  std::vector<uint8_t> buf(1 << 16);
  while (got.size() < 102) {
    pollfd pf{rx.get(), POLLIN, 0};
    REQUIRE(::poll(&pf, 1, 1000) == 1);
    ssize_t n = ::recv(rx.get(), buf.data(), buf.size(), 0);
    REQUIRE(n > 0);
    dec.feed({buf.data(), static_cast<size_t>(n)});
    while (auto f = dec.next()) got.push_back(std::move(*f));
  }
  for (int i = 0; i < 100; i++)
    CHECK(got[i].payload == std::vector<uint8_t>{static_cast<uint8_t>(i)});
  CHECK(got[100].type == Type::Stderr);
  CHECK(got[100].payload == std::vector<uint8_t>{'z'});
  CHECK(got[101].type == Type::Exit);
  CHECK(got[101].payload.empty());

  // Nobody reads: the socket fills, flush() keeps the rest queued and still reports success.
  std::vector<uint8_t> chunk(60000, 7);
  for (int i = 0; i < 100; i++) q.push(Type::Stdout, chunk);
  CHECK(q.flush(tx.get()));
  CHECK_FALSE(q.empty());
  CHECK(q.bytes() > 0);
  CHECK(q.bytes() < 100 * (kHeaderSize + chunk.size()));
}
