// Unit tests for the VMM's own Hello to guest-init (monitor/guest_sync) against a fake
// vsock.sock: the request it sends (CONNECT line, then a Hello with the sandbox id, fresh entropy
// and the host's time), that only a HelloReply counts as answered, and that no listener is not
// an error.
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "monitor/guest_sync.h"
#include "proto/agent.h"
#include "support/temp_dir.h"
#include "util/event_loop.h"
#include "util/fs.h"
#include "util/socket.h"

using namespace space;

namespace {

struct TempSock {
  test::TempDir dir{"sync"};
  std::string path = dir.path + "/vsock.sock";
  Fd listen() const {
    Fd l(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    REQUIRE(::bind(l.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(l.get(), 4) == 0);
    return l;
  }
};

// Plays the vsock bridge and guest-init for one connection: reads the CONNECT line and the Hello,
// then answers with `reply_type`.
struct FakeGuest {
  std::string connect_line;
  proto::Hello hello;
  std::thread thread;
  FakeGuest(const Fd& listener, proto::Type reply_type) {
    thread = std::thread([this, &listener, reply_type] {
      Fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
      REQUIRE(c);
      auto dl = net::Deadline::after_ms(5000);
      connect_line = net::read_line(c.get(), dl, 64).value_or("");
      proto::FrameDecoder dec;
      std::optional<proto::Frame> f;
      char buf[256];
      while (!(f = dec.next())) {
        ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
        REQUIRE(n > 0);
        dec.feed({reinterpret_cast<uint8_t*>(buf), static_cast<size_t>(n)});
      }
      REQUIRE(f->type == proto::Type::Hello);
      hello = proto::Hello::decode(f->payload);
      std::string out = "OK 1024\n";
      proto::HelloReply r;
      r.agent = "fake";
      r.hostname = hello.sandbox;
      auto frame = proto::encode_frame(reply_type, reply_type == proto::Type::HelloReply
                                                       ? r.encode()
                                                       : proto::ErrorMsg{.message = "no"}.encode());
      out.append(frame.begin(), frame.end());
      REQUIRE(::send(c.get(), out.data(), out.size(), MSG_NOSIGNAL) == ssize_t(out.size()));
      ::recv(c.get(), buf, 1, 0);  // until GuestSync closes its end
    });
  }
  void join() {
    if (thread.joinable()) thread.join();
  }
  ~FakeGuest() { join(); }
};

uint64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

// Runs `loop` until `done` or 5 s.
template <class F>
void run_until(EventLoop& loop, F done) {
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done() && std::chrono::steady_clock::now() < end) loop.run_once(20);
}

}  // namespace

TEST_CASE("guest sync: a Hello with the sandbox id, entropy and time; a HelloReply counts") {
  TempSock s;
  Fd l = s.listen();
  EventLoop loop;
  monitor::GuestSync sync(loop, s.path, "b-1", proto::Hello::kImage);
  std::array<uint8_t, proto::kEntropySize> first{};
  {
    FakeGuest g(l, proto::Type::HelloReply);
    const uint64_t before = now_ns();
    sync.kick();
    run_until(loop, [&] { return sync.answered() == 1; });
    CHECK(sync.answered() == 1);
    g.join();
    CHECK(g.connect_line == "CONNECT 1024");
    CHECK(g.hello.version == proto::kVersion);
    CHECK(g.hello.sandbox == "b-1");
    CHECK(g.hello.flags == proto::Hello::kImage);
    CHECK(g.hello.time_ns >= before);
    CHECK(g.hello.time_ns <= now_ns());
    first = g.hello.entropy;
    CHECK(first != std::array<uint8_t, proto::kEntropySize>{});
  }
  FakeGuest g2(l, proto::Type::HelloReply);
  sync.kick();
  run_until(loop, [&] { return sync.answered() == 2; });
  CHECK(sync.answered() == 2);
  g2.join();
  CHECK(g2.hello.entropy != first);  // fresh entropy every time
}

TEST_CASE("guest sync: an Error frame is not an answer") {
  TempSock s;
  Fd l = s.listen();
  EventLoop loop;
  monitor::GuestSync sync(loop, s.path, "x", 0);
  FakeGuest g(l, proto::Type::Error);
  sync.kick();
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < end) loop.run_once(20);
  CHECK(sync.answered() == 0);
}

TEST_CASE("guest sync: nobody listening is not an error") {
  TempSock s;
  EventLoop loop;
  monitor::GuestSync sync(loop, s.path, "x", 0);
  CHECK_NOTHROW(sync.kick());
  loop.run_once(10);
  CHECK(sync.answered() == 0);
}
