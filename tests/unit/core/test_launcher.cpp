// Unit tests for core/launcher's waits against fake servers on Unix sockets: the boot wait that
// redials vsock.sock and redoes the agent handshake while the guest boots (core/agent_client's
// vsock_dial underneath), gives up at its deadline, and does not retry a refused handshake; and
// the VMM's ready-pipe protocol.
#include <doctest/doctest.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "core/agent_client.h"
#include "core/launcher.h"
#include "support/fake_server.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/socket.h"

using namespace space;
using space::test::FakeServer;
using space::test::read_line_blocking;
using space::test::write_str;

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
