// Unit tests for the host-side clients against fake servers on unix sockets: deadlines and
// cancellation (util/socket), the control socket (core/control_client), vsock dialing and the
// agent handshake (core/agent_client), and the boot wait that retries while the guest boots
// (core/launcher).
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "core/agent_client.h"
#include "core/control_client.h"
#include "core/launcher.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/socket.h"

using namespace space;

namespace {

// A listening unix socket in a temp dir whose connections a thread hands to `serve`, one at a time.
struct FakeServer {
  std::string dir, path;
  Fd listener;
  std::thread thread;
  std::atomic<bool> stop{false};
  std::atomic<int> accepted{0};

  explicit FakeServer(std::function<void(int fd, int n)> serve, const char* name = "s.sock") {
    char tmpl[] = "/tmp/space-test-sock-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    dir = tmpl;
    path = dir + "/" + name;
    listener = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listener.get(), 8) == 0);
    thread = std::thread([this, serve] {
      while (!stop) {
        pollfd p{listener.get(), POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        Fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (c) serve(c.get(), ++accepted);
      }
    });
  }
  ~FakeServer() {
    stop = true;
    thread.join();
    fs::remove_tree(dir);
  }
};

std::string read_line_blocking(int fd) {
  std::string s;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') s += c;
  return s;
}

void write_str(int fd, const std::string& s) { write_all(fd, s.data(), s.size()); }

}  // namespace

TEST_CASE("deadlines time out and cancel fds cancel") {
  Pipe p = Pipe::make();
  set_nonblocking(p.read.get());
  try {
    net::read_line(p.read.get(), net::Deadline::after_ms(30));
    FAIL("no timeout");
  } catch (const Error& e) {
    CHECK(e.err() == ETIMEDOUT);
  }
  Pipe cancel = Pipe::make();
  write_str(cancel.write.get(), "x");
  auto dl = net::Deadline::never();
  dl.cancel_on(cancel.read.get());
  CHECK_THROWS_AS(net::read_line(p.read.get(), dl), net::Cancelled);
  CHECK_THROWS_AS(net::sleep_ms(5000, dl), net::Cancelled);
  write_str(p.write.get(), "line one\npartial");
  p.write.reset();
  CHECK(net::read_line(p.read.get(), net::Deadline::after_ms(1000)) == "line one");
  CHECK_THROWS_WITH_AS(net::read_line(p.read.get(), net::Deadline::after_ms(1000)),
                       doctest::Contains("middle of a line"), Error);
  CHECK(net::Deadline::after_ms(1000).capped_ms(10).remaining_ms() <= 10);
}

TEST_CASE("read_line on a socket takes one line and leaves what follows") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  Fd a(sv[0]), b(sv[1]);
  auto dl = [] { return net::Deadline::after_ms(1000); };
  write_str(a.get(), "OK 1024\nfirst\nsec");
  CHECK(net::read_line(b.get(), dl(), 64) == "OK 1024");
  CHECK(net::read_line(b.get(), dl(), 64) == "first");
  std::thread later([&] {
    ::usleep(20000);
    write_str(a.get(), "ond\nrest");
  });
  CHECK(net::read_line(b.get(), dl(), 64) == "second");  // a line split across two writes
  later.join();
  char rest[8] = {};
  CHECK(::read(b.get(), rest, sizeof rest) == 4);  // nothing after the newline was consumed
  CHECK(std::string(rest) == "rest");
  write_str(a.get(), std::string(100, 'x') + "\n");
  CHECK_THROWS_WITH_AS(net::read_line(b.get(), dl(), 64), doctest::Contains("longer than 64"), Error);
  a.reset();
  CHECK_FALSE(net::read_line(b.get(), dl(), 1000).has_value());  // EOF at a line boundary
}

TEST_CASE("unix_connect errors carry errno") {
  try {
    net::unix_connect("/tmp/space-test-definitely-missing.sock", net::Deadline::after_ms(100));
    FAIL("connected");
  } catch (const Error& e) {
    CHECK(e.err() == ENOENT);
  }
  CHECK_THROWS_WITH_AS(net::unix_connect(std::string(200, 'x'), net::Deadline::after_ms(100)),
                       doctest::Contains("longer than"), Error);
}

TEST_CASE("control_call") {
  FakeServer srv([](int fd, int) {
    std::string req = read_line_blocking(fd);
    if (req == R"({"op":"ping"})") write_str(fd, "{\"ok\":true,\"status\":\"running\"}\n");
    else if (req == R"({"op":"bad"})") write_str(fd, "{\"ok\":false,\"error\":\"unknown op\"}\n");
    else if (req == R"({"op":"garbage"})") write_str(fd, "not json\n");
    // "silent": reply nothing, close
  });
  json::Value ping = json::Value::object();
  ping.set("op", "ping");
  auto r = core::control_call(srv.path, ping, 2000);
  CHECK(r.at("status").as_string() == "running");
  json::Value bad = json::Value::object();
  bad.set("op", "bad");
  CHECK_THROWS_WITH_AS(core::control_call(srv.path, bad, 2000), "control request bad: unknown op",
                       Error);
  bad.set("op", "garbage");
  CHECK_THROWS_WITH_AS(core::control_call(srv.path, bad, 2000),
                       doctest::Contains("invalid JSON"), Error);
  bad.set("op", "silent");
  CHECK_THROWS_WITH_AS(core::control_call(srv.path, bad, 2000),
                       doctest::Contains("without replying"), Error);
}

TEST_CASE("vsock dial and agent handshake, retried while the guest boots") {
  // Connections 1 and 2 are closed at once (nobody listening in the guest yet), as the VMM does.
  FakeServer srv(
      [](int fd, int n) {
        std::string line = read_line_blocking(fd);
        if (line != "CONNECT 1024" || n < 3) return;
        write_str(fd, "OK 1073741824\n");
        proto::FrameDecoder dec;
        uint8_t buf[4096];
        std::optional<proto::Frame> f;
        while (!f) {
          ssize_t k = ::read(fd, buf, sizeof buf);
          if (k <= 0) return;
          dec.feed({buf, static_cast<size_t>(k)});
          f = dec.next();
        }
        if (f->type != proto::Type::Hello) return;
        proto::HelloReply reply;
        reply.agent = "guest-init test";
        reply.hostname = "box";
        auto bytes = proto::encode_frame(proto::Type::HelloReply, reply.encode());
        write_all(fd, bytes.data(), bytes.size());
      },
      "vsock.sock");
  try {
    core::vsock_dial(srv.path, proto::kAgentPort, net::Deadline::after_ms(2000));
    FAIL("first dial should be reset");
  } catch (const Error& e) {
    CHECK(e.err() == ECONNRESET);
  }
  store::SandboxPaths p;
  p.vsock_sock = srv.path;
  auto reply = core::wait_guest_ready(p, net::Deadline::after_ms(5000));
  CHECK(reply.agent == "guest-init test");
  CHECK(reply.hostname == "box");
  CHECK(srv.accepted.load() == 3);
}

TEST_CASE("the boot wait gives up at its deadline with the last failure") {
  store::SandboxPaths p;
  p.vsock_sock = "/tmp/space-test-no-such-dir/vsock.sock";
  CHECK_THROWS_WITH_AS(core::wait_guest_ready(p, net::Deadline::after_ms(300)),
                       doctest::Contains("No such file"), Error);
}

TEST_CASE("a guest that refuses the handshake is not retried") {
  FakeServer srv([](int fd, int) {
    read_line_blocking(fd);
    write_str(fd, "OK 5\n");
    uint8_t hello[256];
    if (::read(fd, hello, sizeof hello) <= 0) return;  // the Hello frame
    proto::ErrorMsg err{"version mismatch"};
    auto bytes = proto::encode_frame(proto::Type::Error, err.encode());
    write_all(fd, bytes.data(), bytes.size());
  });
  store::SandboxPaths p;
  p.vsock_sock = srv.path;
  CHECK_THROWS_WITH_AS(core::wait_guest_ready(p, net::Deadline::after_ms(5000)),
                       doctest::Contains("refused the handshake: version mismatch"), Error);
  CHECK(srv.accepted.load() == 1);
}

TEST_CASE("ready pipe protocol") {
  auto run = [](const std::string& text) {
    Pipe p = Pipe::make();
    set_nonblocking(p.read.get());
    write_str(p.write.get(), text);
    p.write.reset();
    core::wait_vmm_ready(p.read, net::Deadline::after_ms(1000));
  };
  CHECK_NOTHROW(run("ok\n"));
  CHECK_THROWS_WITH_AS(run("error: no KVM\n"), "the VMM failed: no KVM", Error);
  CHECK_THROWS_WITH_AS(run(""), "the VMM exited before the VM started", Error);
  CHECK_THROWS_WITH_AS(run("what\n"), doctest::Contains("unexpected ready line"), Error);
}
