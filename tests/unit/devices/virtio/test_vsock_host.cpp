// virtio-vsock, host-facing half (vsock_host.cpp): host-initiated connections end to end through
// the device's Unix socket (the CONNECT handshake, data both ways, credit, half-closes, RST,
// malformed handshakes, several connections at once, RX buffers too small for data).
#include <doctest/doctest.h>

#include "devices/virtio/vsock.h"
#include "support/virtio_vsock_rig.h"

using namespace space;
using namespace space::devices;
using namespace space::memory;
using namespace space::devices::vsock;
using namespace space::testing;

TEST_CASE("host-initiated connection: handshake, data both ways, credit, shutdown") {
  Rig r;
  r.init();
  Fd client = r.connect_client();
  uint32_t hp = establish(r, client.get(), 1234);
  CHECK(r.vs->connection_count() == 1);

  r.write_host(client.get(), "ping");
  r.pump([&] { return !r.inbox.empty(); });
  CHECK(r.take_data() == "ping");

  r.send(kOpRw, 1234, hp, "pong");
  CHECK(r.read_host(client.get(), 4) == "pong");

  SUBCASE("the guest's credit limits what is read from the host") {
    r.send(kOpCreditUpdate, 1234, hp, {}, 16, 4);  // 16-byte buffer, "ping" consumed
    std::string big(40, 'x');
    r.write_host(client.get(), big);
    for (int i = 0; i < 20; i++) r.round();
    CHECK(r.take_data().size() == 16);
    r.send(kOpCreditUpdate, 1234, hp, {}, 16, 20);
    for (int i = 0; i < 20; i++) r.round();
    CHECK(r.take_data().size() == 16);
    r.send(kOpCreditUpdate, 1234, hp, {}, 16, 36);
    for (int i = 0; i < 20; i++) r.round();
    CHECK(r.take_data().size() == 8);
  }
  SUBCASE("CREDIT_REQUEST is answered with our fwd_cnt") {
    r.send(kOpCreditRequest, 1234, hp);
    Pkt p = r.expect(kOpCreditUpdate);
    CHECK(p.h.fwd_cnt == 4);
    CHECK(p.h.buf_alloc == devices::VirtioVsock::kBufAlloc);
  }
  SUBCASE("half-close both ways, then RST ends the connection") {
    ::shutdown(client.get(), SHUT_WR);
    Pkt s = r.expect(kOpShutdown);
    CHECK(s.h.flags == kShutdownSend);
    r.send(kOpRw, 1234, hp, "last words");  // the host can still receive
    CHECK(r.read_host(client.get(), 10) == "last words");
    r.send(kOpShutdown, 1234, hp, {}, 65536, 4, kShutdownSend);
    r.expect(kOpRst);
    bool eof = false;
    r.read_host(client.get(), 1, &eof);
    CHECK(eof);
    CHECK(r.vs->connection_count() == 0);
  }
  SUBCASE("guest close: SHUTDOWN both flags, then RST") {
    r.send(kOpShutdown, 1234, hp, {}, 65536, 4, kShutdownSend | kShutdownRcv);
    r.expect(kOpRst);
    bool eof = false;
    r.read_host(client.get(), 1, &eof);
    CHECK(eof);
    CHECK(r.vs->connection_count() == 0);
  }
  SUBCASE("host close: SHUTDOWN both flags, the guest answers RST") {
    client.reset();
    Pkt s = r.expect(kOpShutdown);
    CHECK((s.h.flags & kShutdownSend) != 0);
    r.pump([&] { return !r.inbox.empty(); }, 20);
    r.send(kOpRst, 1234, hp);
    r.pump([&] { return r.vs->connection_count() == 0; });
    CHECK(r.vs->connection_count() == 0);
  }
}

TEST_CASE("bytes after the CONNECT line are forwarded, not swallowed") {
  Rig r;
  r.init();
  Fd client = r.connect_client();
  establish(r, client.get(), 80, "early");
  r.pump([&] { return !r.inbox.empty(); });
  CHECK(r.take_data() == "early");
}

TEST_CASE("a REQUEST waits for RX buffers") {
  Rig r;
  r.init(0);
  Fd client = r.connect_client();
  r.write_host(client.get(), "CONNECT 5\n");
  for (int i = 0; i < 10; i++) r.round();
  CHECK(r.inbox.empty());
  r.post_rx(1);
  Pkt p = r.expect(kOpRequest);
  CHECK(p.h.dst_port == 5);
}

TEST_CASE("nobody listening in the guest: RST closes the client") {
  Rig r;
  r.init();
  Fd client = r.connect_client();
  r.write_host(client.get(), "CONNECT 999\n");
  Pkt req = r.expect(kOpRequest);
  r.send(kOpRst, 999, req.h.src_port);
  bool eof = false;
  r.read_host(client.get(), 1, &eof);
  CHECK(eof);
  CHECK(r.vs->connection_count() == 0);
}

TEST_CASE("malformed handshakes close the client") {
  Rig r;
  r.init();
  for (std::string line : {std::string("CONNECT abc\n"), std::string(40, 'A'),
                           std::string("CONNECT 0\n"), std::string("HELLO\n")}) {
    INFO(line);
    Fd client = r.connect_client();
    r.write_host(client.get(), line);
    bool eof = false;
    r.read_host(client.get(), 1, &eof);
    CHECK(eof);
  }
  CHECK(r.vs->connection_count() == 0);
  CHECK(r.inbox.empty());
}

TEST_CASE("several connections at once are kept apart") {
  Rig r;
  r.init(32);
  Fd a = r.connect_client(), b = r.connect_client();
  uint32_t ha = establish(r, a.get(), 100);
  uint32_t hb = establish(r, b.get(), 200);
  CHECK(ha != hb);
  CHECK(r.vs->connection_count() == 2);
  r.send(kOpRw, 200, hb, "to-b");
  r.send(kOpRw, 100, ha, "to-a");
  CHECK(r.read_host(a.get(), 4) == "to-a");
  CHECK(r.read_host(b.get(), 4) == "to-b");
  r.write_host(b.get(), "from-b");
  Pkt p = r.expect(kOpRw);
  CHECK(p.h.src_port == hb);
  CHECK(p.h.dst_port == 200);
  CHECK(p.payload == "from-b");
}

TEST_CASE("RX buffers with room for a header only, while data waits, fail the device") {
  // Before: the RX loop put the connection back and popped the same buffer again for ever,
  // with the device mutex held (pause, checkpoint and destroy froze).
  Rig r;
  r.init(1);
  Fd client = r.connect_client();
  establish(r, client.get(), 1234);
  for (int i = 0; i < 4; i++) {
    uint64_t h = r.drv->alloc(kHeaderSize);
    r.rx_bufs[r.drv->post(0, {{h, kHeaderSize, true}})] = {h, 0};
  }
  r.drv->kick(0);
  r.write_host(client.get(), "data the guest has no room for");
  CHECK(r.pump([&] { return (r.dev->status() & devices::virtio::kStatusNeedsReset) != 0; }));
  CHECK(r.take_data().empty());
}
