// Unit tests for guest-init/channel: frames sent whole (also from several threads at once, never
// interleaved), Error frames, and a vanished peer or an oversized payload reported as false
// instead of a SIGPIPE or an exception.
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "guest-init/channel.h"
#include "proto/agent.h"
#include "util/fd.h"

using namespace space;
using space::guest::Channel;

namespace {

struct Pair {
  Fd peer;
  std::unique_ptr<Channel> ch;
  Pair() {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    ch = std::make_unique<Channel>(Fd(sv[0]));
    peer.reset(sv[1]);
  }
  // Reads frames until `n` have arrived (or 5 s pass).
  std::vector<proto::Frame> recv(size_t n) {
    std::vector<proto::Frame> out;
    proto::FrameDecoder d;
    std::vector<uint8_t> buf(1 << 16);
    while (out.size() < n) {
      pollfd p{peer.get(), POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) break;
      ssize_t k = ::read(peer.get(), buf.data(), buf.size());
      if (k <= 0) break;
      d.feed({buf.data(), static_cast<size_t>(k)});
      while (auto f = d.next()) out.push_back(std::move(*f));
    }
    return out;
  }
};

}  // namespace

TEST_CASE("Channel sends whole frames and Error frames") {
  Pair p;
  CHECK(p.ch->fd() >= 0);
  std::vector<uint8_t> data = {1, 2, 3};
  CHECK(p.ch->send(proto::Type::Stdout, data));
  CHECK(p.ch->send(proto::Type::Ack));
  CHECK(p.ch->send_error("no such thing"));
  auto fs = p.recv(3);
  REQUIRE(fs.size() == 3);
  CHECK(fs[0].type == proto::Type::Stdout);
  CHECK(fs[0].payload == data);
  CHECK(fs[1].type == proto::Type::Ack);
  CHECK(fs[1].payload.empty());
  CHECK(fs[2].type == proto::Type::Error);
  CHECK(proto::ErrorMsg::decode(fs[2].payload).message == "no such thing");
}

TEST_CASE("Channel: frames from several threads never interleave") {
  Pair p;
  constexpr int kThreads = 4, kFrames = 50;
  std::vector<std::thread> ts;
  std::vector<proto::Frame> got;
  std::thread reader([&] { got = p.recv(kThreads * kFrames); });
  for (int t = 0; t < kThreads; t++)
    ts.emplace_back([&p, t] {
      std::vector<uint8_t> payload(100'000 + t, static_cast<uint8_t>('a' + t));
      for (int i = 0; i < kFrames; i++) p.ch->send(proto::Type::Stdout, payload);
    });
  for (auto& t : ts) t.join();
  reader.join();
  REQUIRE(got.size() == size_t(kThreads * kFrames));
  int per[kThreads] = {};
  for (const auto& f : got) {
    REQUIRE_FALSE(f.payload.empty());
    int t = f.payload[0] - 'a';
    REQUIRE(t >= 0);
    REQUIRE(t < kThreads);
    CHECK(f.payload == std::vector<uint8_t>(100'000 + size_t(t), static_cast<uint8_t>('a' + t)));
    per[t]++;
  }
  for (int t = 0; t < kThreads; t++) CHECK(per[t] == kFrames);
}

TEST_CASE("Channel::send is false for a vanished peer and an oversized payload") {
  Pair p;
  std::vector<uint8_t> big(proto::kMaxPayload + 1);
  CHECK_FALSE(p.ch->send(proto::Type::Stdout, big));
  p.peer.reset();
  CHECK_FALSE(p.ch->send(proto::Type::Ack));  // EPIPE, no SIGPIPE
  CHECK_FALSE(p.ch->send_error("gone"));
}
