// Unit tests for devices/virtio/vsock_packet: the 44-byte little-endian header, the CONNECT line
// parser and OK line, and the peer credit arithmetic (with wrapped counters).
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "devices/virtio/vsock_packet.h"

using namespace space::devices::vsock;

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
