// Egress messages (src/proto/net.h): round trips, and every malformed input the decoders must
// refuse with ProtoError (truncation, trailing bytes, bad hosts, port 0, unknown statuses).
#include <doctest/doctest.h>

#include "proto/agent.h"
#include "proto/net.h"

using namespace space::proto;

TEST_CASE("NetConnect round-trips names and literals, and refuses the rest") {
  for (const char* h : {"pypi.org", "127.0.0.2", "[::1]", "::1", "a"}) {
    auto b = NetConnect{.host = h, .port = 443}.encode();
    auto c = NetConnect::decode(b);
    CHECK(c.host == h);
    CHECK(c.port == 443);
    for (size_t n = 0; n < b.size(); n++)
      CHECK_THROWS_AS(NetConnect::decode({b.data(), n}), ProtoError);
    auto longer = b;
    longer.push_back(0);
    CHECK_THROWS_AS(NetConnect::decode(longer), ProtoError);
  }
  CHECK(NetConnect::decode(NetConnect{.host = std::string(kMaxNetHost, 'a'), .port = 1}.encode())
            .port == 1);
  CHECK_THROWS_AS(
      NetConnect::decode(NetConnect{.host = std::string(kMaxNetHost + 1, 'a'), .port = 1}.encode()),
      ProtoError);
  CHECK_THROWS_AS(NetConnect::decode(NetConnect{.host = "", .port = 80}.encode()), ProtoError);
  CHECK_THROWS_AS(NetConnect::decode(NetConnect{.host = "a b", .port = 80}.encode()), ProtoError);
  CHECK_THROWS_AS(NetConnect::decode(NetConnect{.host = "a\r\nHost: x", .port = 80}.encode()),
                  ProtoError);
  CHECK_THROWS_AS(
      NetConnect::decode(NetConnect{.host = std::string("a\0b", 3), .port = 80}.encode()),
      ProtoError);
  CHECK_THROWS_AS(NetConnect::decode(NetConnect{.host = "pypi.org", .port = 0}.encode()),
                  ProtoError);
}

TEST_CASE("ForwardRequest round-trips a port and refuses 0, truncation and trailing bytes") {
  auto b = ForwardRequest{.port = 8080}.encode();
  CHECK(ForwardRequest::decode(b).port == 8080);
  for (size_t n = 0; n < b.size(); n++)
    CHECK_THROWS_AS(ForwardRequest::decode({b.data(), n}), ProtoError);
  b.push_back(1);
  CHECK_THROWS_AS(ForwardRequest::decode(b), ProtoError);
  CHECK_THROWS_AS(ForwardRequest::decode(ForwardRequest{.port = 0}.encode()), ProtoError);
}

TEST_CASE("NetResult round-trips every status it may carry and refuses others") {
  for (uint16_t s : {200, 400, 403, 502, 503, 504}) {
    NetResult r;
    r.status = s;
    r.address = "127.0.0.2:80";
    r.message = "why";
    auto d = NetResult::decode(r.encode());
    CHECK(d.status == s);
    CHECK(d.ok() == (s == kNetOk));
    CHECK(d.address == "127.0.0.2:80");
    CHECK(d.message == "why");
  }
  for (uint16_t s : {0, 100, 201, 404, 500, 65535}) {
    NetResult r;
    r.status = s;
    CHECK_THROWS_AS(NetResult::decode(r.encode()), ProtoError);
  }
  auto b = NetResult{}.encode();
  for (size_t n = 0; n < b.size(); n++)
    CHECK_THROWS_AS(NetResult::decode({b.data(), n}), ProtoError);
  // The encoder bounds what it sends; a peer that sends more is refused.
  NetResult big;
  big.status = 403;
  big.message = std::string(kMaxNetMessage * 2, 'm');
  CHECK(NetResult::decode(big.encode()).message.size() == kMaxNetMessage);
  Writer w;
  w.u16(403);
  w.str("");
  w.str(std::string(kMaxNetMessage + 1, 'm'));
  CHECK_THROWS_AS(NetResult::decode(w.buffer()), ProtoError);
}
