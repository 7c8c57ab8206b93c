// Unit tests for guest-init/session: whole connections served by serve_connection on a thread of
// this process, over a socketpair (the unit tests link guest-init's modules, the
// guest_init_modules object library): the Hello handshake, refusals of malformed frames and
// requests out of order, Poweroff, and execs whose --secret-env values come from a fake
// credential helper.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "guest-init/context.h"
#include "guest-init/session.h"
#include "proto/agent.h"
#include "proto/exec.h"
#include "support/fake_cred_helper.h"
#include "util/fd.h"

using namespace space;
using namespace space::guest;
using namespace space::proto;
using FakeHelper = space::test::FakeCredHelper;

namespace {

// The host side of one connection to a session running on a thread of this process.
struct Harness {
  Context ctx;
  Fd host;
  std::thread server;
  std::atomic<int> poweroffs{0};

  explicit Harness(std::string cred_unix = "") {
    ctx.cred_unix = std::move(cred_unix);
    ctx.console = Console(devnull());
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    host.reset(sv[0]);
    ctx.hostname = "hx";
    ctx.request_poweroff = [this] { poweroffs++; };
    server =
        std::thread([this, fd = Fd(sv[1])]() mutable { serve_connection(std::move(fd), ctx); });
  }
  ~Harness() {
    host.reset();
    server.join();
  }
  static int devnull() {
    static Fd fd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    return fd.get();
  }
  void send_raw(const std::vector<uint8_t>& b) { write_all(host.get(), b.data(), b.size()); }
  void send(Type t, const std::vector<uint8_t>& payload = {}) {
    send_raw(encode_frame(t, payload));
  }
  void hello(uint32_t version = kVersion, uint32_t flags = 0) {
    Hello h;
    h.version = version;
    h.flags = flags;
    h.client = "test";
    send(Type::Hello, h.encode());
  }
  // Reads frames until `n` have arrived or the peer closes (or 5 s pass). Sets `closed`.
  std::vector<Frame> recv(size_t n) {
    std::vector<Frame> out;
    FrameDecoder d;
    uint8_t buf[4096];
    while (out.size() < n) {
      pollfd p{host.get(), POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) break;
      ssize_t k = ::read(host.get(), buf, sizeof buf);
      if (k <= 0) {
        closed = true;
        break;
      }
      d.feed({buf, static_cast<size_t>(k)});
      while (auto f = d.next()) out.push_back(std::move(*f));
    }
    return out;
  }
  // True if the server closed its end (EOF within 5 s).
  bool sees_eof() {
    if (closed) return true;
    uint8_t b[64];
    pollfd p{host.get(), POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return false;
    return ::read(host.get(), b, sizeof b) == 0;
  }
  bool closed = false;
};

std::string error_text(const Frame& f) {
  REQUIRE(f.type == Type::Error);
  return ErrorMsg::decode(f.payload).message;
}

}  // namespace

TEST_CASE("session: Hello gets HelloReply with agent, hostname and uptime") {
  Harness h;
  h.hello();
  auto fs = h.recv(1);
  REQUIRE(fs.size() == 1);
  REQUIRE(fs[0].type == Type::HelloReply);
  auto r = HelloReply::decode(fs[0].payload);
  CHECK(r.version == kVersion);
  CHECK(r.agent == std::string("guest-init ") + kAgentVersion);
  CHECK(r.hostname == "hx");
  CHECK(r.uptime_ms > 0);
}

TEST_CASE("session: Hello fed one byte at a time") {
  Harness h;
  Hello hello;
  hello.client = "slow";
  auto bytes = encode_frame(Type::Hello, hello.encode());
  for (uint8_t b : bytes) {
    h.send_raw({b});
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  auto fs = h.recv(1);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].type == Type::HelloReply);
}

TEST_CASE("session: an exec for an image that is not mounted is refused with the reason") {
  Harness h;  // test mode (not PID 1): nothing is mounted, ever
  h.hello(kVersion, Hello::kImage);
  auto reply = h.recv(1);
  REQUIRE(reply.size() == 1);
  CHECK(reply[0].type == Type::HelloReply);  // the handshake itself succeeds
  ExecRequest req;
  req.argv = {"true"};
  h.send(Type::Exec, req.encode());
  auto fs = h.recv(1);
  REQUIRE(fs.size() == 1);
  CHECK(error_text(fs[0]).find("serves no image") != std::string::npos);
  CHECK(h.sees_eof());
}

TEST_CASE("session: another protocol version is refused with Error and closed") {
  Harness h;
  h.hello(kVersion + 1);
  auto fs = h.recv(1);
  REQUIRE(fs.size() == 1);
  CHECK(error_text(fs[0]).find("protocol version") != std::string::npos);
  CHECK(h.sees_eof());
}

TEST_CASE("session: a request before Hello is refused") {
  Harness h;
  h.send(Type::Poweroff);
  auto fs = h.recv(1);
  REQUIRE(fs.size() == 1);
  CHECK(error_text(fs[0]).find("expected Hello") != std::string::npos);
  CHECK(h.sees_eof());
  CHECK(h.poweroffs == 0);
}

TEST_CASE("session: malformed frames get Error and close the connection") {
  SUBCASE("nonzero reserved field") {
    Harness h;
    h.send_raw({0, 0, 0, 0, 1, 0, 1, 0});
    auto fs = h.recv(1);
    REQUIRE(fs.size() == 1);
    CHECK(error_text(fs[0]).find("malformed frame") != std::string::npos);
    CHECK(h.sees_eof());
  }
  SUBCASE("oversized length") {
    Harness h;
    h.send_raw({0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0});
    auto fs = h.recv(1);
    REQUIRE(fs.size() == 1);
    CHECK(error_text(fs[0]).find("too large") != std::string::npos);
    CHECK(h.sees_eof());
  }
  SUBCASE("Hello with a truncated payload") {
    Harness h;
    h.send(Type::Hello, {static_cast<uint8_t>(space::proto::kVersion), 0, 0, 0, 9, 0, 0, 0, 'x'});
    auto fs = h.recv(1);
    REQUIRE(fs.size() == 1);
    CHECK(error_text(fs[0]).find("truncated") != std::string::npos);
    CHECK(h.sees_eof());
  }
  SUBCASE("Hello with trailing bytes") {
    Harness h;
    auto p = Hello{}.encode();
    p.push_back(0);
    h.send(Type::Hello, p);
    auto fs = h.recv(1);
    REQUIRE(fs.size() == 1);
    CHECK(error_text(fs[0]).find("trailing") != std::string::npos);
  }
  SUBCASE("unknown type after Hello") {
    Harness h;
    h.hello();
    h.send_raw({0, 0, 0, 0, 0x99, 0, 0, 0});
    auto fs = h.recv(2);
    REQUIRE(fs.size() == 2);
    CHECK(fs[0].type == Type::HelloReply);
    CHECK(error_text(fs[1]).find("unsupported frame type 153") != std::string::npos);
    CHECK(h.sees_eof());
  }
  SUBCASE("duplicate Hello") {
    Harness h;
    h.hello();
    h.hello();
    auto fs = h.recv(2);
    REQUIRE(fs.size() == 2);
    CHECK(error_text(fs[1]) == "duplicate Hello");
  }
  SUBCASE("Poweroff with a payload") {
    Harness h;
    h.hello();
    h.send(Type::Poweroff, {1});
    auto fs = h.recv(2);
    REQUIRE(fs.size() == 2);
    CHECK(fs[1].type == Type::Error);
    CHECK(h.poweroffs == 0);
  }
}

TEST_CASE("session: Hello and Poweroff in one write get HelloReply, Ack and one poweroff request") {
  Harness h;
  auto a = encode_frame(Type::Hello, Hello{}.encode());
  auto b = encode_frame(Type::Poweroff, {});
  a.insert(a.end(), b.begin(), b.end());
  h.send_raw(a);
  auto fs = h.recv(2);
  REQUIRE(fs.size() == 2);
  CHECK(fs[0].type == Type::HelloReply);
  CHECK(fs[1].type == Type::Ack);
  CHECK(fs[1].payload.empty());
  // The Ack is sent before the request is made: give the session a moment.
  for (int i = 0; i < 500 && h.poweroffs == 0; i++) ::usleep(2000);
  CHECK(h.poweroffs == 1);
}

TEST_CASE("session: the host closing mid-frame ends the session quietly") {
  Harness h;
  h.send_raw({5, 0, 0, 0, 1, 0});
  REQUIRE(::shutdown(h.host.get(), SHUT_WR) == 0);  // the host goes, its frame half sent
  CHECK(h.recv(1).empty());                         // no reply to a frame that never came whole
  CHECK(h.closed);  // and the session ended: its end closed within 5 s
  CHECK(h.poweroffs == 0);
}

namespace {

ExecRequest shell(const std::string& script, std::vector<std::string> secret_env) {
  ExecRequest q;
  q.argv = {"/bin/sh", "-c", script};
  q.secret_env = std::move(secret_env);
  return q;
}

}  // namespace

TEST_CASE("session: --secret-env values reach the process's environment, fetched from the helper") {
  FakeHelper helper;
  Harness h(helper.path);
  std::atomic<bool> done{false};
  std::thread reaper([&] {  // guest-init's main thread reaps; here this one does
    while (!done) {
      h.ctx.reaper.reap();
      ::usleep(5000);
    }
  });
  h.hello();
  h.send(Type::Exec, shell("printf '%s|%s' \"$A\" \"$B\"", {"A=K", "B=K"}).encode());
  auto fs = h.recv(100);  // until the exec ends its connection
  done = true;
  reaper.join();
  std::string out;
  bool exited = false;
  for (auto& f : fs) {
    if (f.type == Type::Stdout) out.append(f.payload.begin(), f.payload.end());
    if (f.type == Type::Exit) {
      exited = true;
      CHECK(ExitStatus::decode(f.payload).value == 0);
    }
  }
  CHECK(exited);
  CHECK(out == "v-123|v-123");
  CHECK(helper.requests == 2);
}

TEST_CASE("session: a denied --secret-env refuses the exec with the helper's reason") {
  FakeHelper helper;
  Harness h(helper.path);
  h.hello();
  h.send(Type::Exec, shell("echo ran", {"A=K", "B=OTHER"}).encode());
  auto fs = h.recv(2);
  REQUIRE(fs.size() == 2);
  CHECK(fs[0].type == Type::HelloReply);
  CHECK(error_text(fs[1]) == "--secret-env OTHER: denied by test");
  CHECK(h.sees_eof());
}

TEST_CASE("session: an unreachable helper refuses the exec, naming the credential helper") {
  Harness h("/tmp/space-test-no-such-helper.sock");
  h.hello();
  h.send(Type::Exec, shell("echo ran", {"A=K"}).encode());
  auto fs = h.recv(2);
  REQUIRE(fs.size() == 2);
  CHECK(error_text(fs[1]).find("credential helper") != std::string::npos);
}
