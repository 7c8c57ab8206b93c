// virtio-vsock: header encoding, the CONNECT parser, credit arithmetic, and host-initiated
// connections end to end (handshake, data, credit, half-closes, RST, malformed handshakes).
#include <doctest/doctest.h>

#include "devices/virtio/vsock.h"
#include "support/virtio_vsock_rig.h"

using namespace space;
using namespace space::devices;
using namespace space::memory;
using namespace space::devices::vsock;
using namespace space::testing;

TEST_CASE("vsock header encodes to the 44-byte little-endian layout") {
  Header h;
  h.src_cid = 3;
  h.dst_cid = 2;
  h.src_port = 0x11223344;
  h.dst_port = 1024;
  h.len = 5;
  h.type = kTypeStream;
  h.op = kOpRw;
  h.flags = 3;
  h.buf_alloc = 65536;
  h.fwd_cnt = 77;
  auto b = encode_header(h);
  CHECK(b[0] == 3);
  CHECK(b[8] == 2);
  CHECK(b[16] == 0x44);
  CHECK(b[24] == 5);
  CHECK(b[28] == 1);
  CHECK(b[30] == 5);
  CHECK(b[32] == 3);
  CHECK(b[40] == 77);
  Header d;
  REQUIRE(decode_header(b, d));
  CHECK(d.src_port == h.src_port);
  CHECK(d.buf_alloc == 65536);
  CHECK(d.fwd_cnt == 77);
  CHECK_FALSE(decode_header(std::span<const uint8_t>(b.data(), 43), d));
}

TEST_CASE("CONNECT line parser") {
  CHECK(parse_connect_line("CONNECT 1024") == 1024u);
  CHECK(parse_connect_line("CONNECT 4294967294") == 4294967294u);
  CHECK(parse_connect_line("CONNECT 0001") == 1u);
  for (const char* bad :
       {"CONNECT 0", "CONNECT 4294967295", "CONNECT 99999999999", "CONNECT", "CONNECT ",
        "CONNECT  12", "CONNECT 12 ", "CONNECT -1", "CONNECT +1", "connect 12", "CONNECT 12\r",
        "CONNECT 1a", "CONNECTX 12", "", "OK 12", "CONNECT 00000000000000000000001"}) {
    INFO(bad);
    CHECK_FALSE(parse_connect_line(bad).has_value());
  }
  CHECK_FALSE(parse_connect_line(std::string_view("CONNECT 1\0", 10)).has_value());
  CHECK_FALSE(parse_connect_line(std::string(1000, '9')).has_value());
  CHECK(format_ok_line(1073741824) == "OK 1073741824\n");
}

TEST_CASE("peer credit arithmetic") {
  CHECK(peer_credit(100, 0, 30) == 70);
  CHECK(peer_credit(100, 30, 30) == 100);
  CHECK(peer_credit(100, 0, 100) == 0);
  CHECK(peer_credit(100, 0xfffffff0u, 0x10) == 68);  // counters wrapped
  CHECK(peer_credit(100, 50, 10) == 0);              // nonsense from the guest: no credit
  CHECK(peer_credit(0, 0, 0) == 0);
}
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
