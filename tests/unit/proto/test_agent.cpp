// Agent protocol codec (src/proto/agent.h): frame round trips, incremental decoding, hostile
// input, and the Hello/HelloReply/Error messages.
// Every malformed input must end in ProtoError, never in a crash, a huge allocation or UB
// (run under -fsanitize=address,undefined to check the last part).
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "proto/agent.h"
#include "support/checks.h"

using namespace space::proto;
using space::test::check_every_truncation_throws;

namespace {

std::vector<uint8_t> header(uint32_t len, uint16_t type, uint16_t reserved = 0) {
  std::vector<uint8_t> h(8);
  std::memcpy(h.data(), &len, 4);
  std::memcpy(h.data() + 4, &type, 2);
  std::memcpy(h.data() + 6, &reserved, 2);
  return h;
}

std::vector<uint8_t> bytes_of(const std::string& s) {
  return {s.begin(), s.end()};
}

std::vector<Frame> drain(FrameDecoder& d) {
  std::vector<Frame> out;
  while (auto f = d.next()) out.push_back(std::move(*f));
  return out;
}

}  // namespace

TEST_CASE("encode_frame writes the documented little-endian header") {
  auto f = encode_frame(Type::Poweroff, {});
  CHECK(f == header(0, 4));
  auto g = encode_frame(Type::Error, bytes_of("abc"));
  REQUIRE(g.size() == 11);
  CHECK(std::vector<uint8_t>(g.begin(), g.begin() + 8) == header(3, 3));
  CHECK(g[8] == 'a');
}

TEST_CASE("encode_frame refuses payloads above kMaxPayload") {
  std::vector<uint8_t> big(kMaxPayload + 1);
  CHECK_THROWS_AS(encode_frame(Type::Hello, big), ProtoError);
  std::vector<uint8_t> max(kMaxPayload);
  CHECK(encode_frame(Type::Hello, max).size() == kMaxPayload + kHeaderSize);
}

TEST_CASE("FrameDecoder round-trips a frame fed whole") {
  FrameDecoder d;
  auto payload = bytes_of("hello world");
  d.feed(encode_frame(Type::Error, payload));
  auto f = d.next();
  REQUIRE(f);
  CHECK(f->type == Type::Error);
  CHECK(f->payload == payload);
  CHECK_FALSE(d.next());
  CHECK(d.buffered() == 0);
}

TEST_CASE("FrameDecoder reassembles frames fed one byte at a time") {
  std::vector<uint8_t> stream;
  for (int i = 0; i < 3; i++) {
    auto fr = encode_frame(Type::Hello, bytes_of(std::string(static_cast<size_t>(i) * 5, 'x')));
    stream.insert(stream.end(), fr.begin(), fr.end());
  }
  FrameDecoder d;
  std::vector<Frame> got;
  for (uint8_t b : stream) {
    d.feed({&b, 1});
    for (auto& f : drain(d)) got.push_back(std::move(f));
  }
  REQUIRE(got.size() == 3);
  for (size_t i = 0; i < 3; i++) CHECK(got[i].payload.size() == i * 5);
  CHECK(d.buffered() == 0);
}

TEST_CASE("FrameDecoder yields nothing until the header and payload are complete") {
  FrameDecoder d;
  auto fr = encode_frame(Type::Error, bytes_of("12345678"));
  d.feed({fr.data(), 7});
  CHECK_FALSE(d.next());
  d.feed({fr.data() + 7, 5});
  CHECK_FALSE(d.next());
  CHECK(d.buffered() == 12);
  d.feed({fr.data() + 12, fr.size() - 12});
  auto f = d.next();
  REQUIRE(f);
  CHECK(f->payload == bytes_of("12345678"));
}

TEST_CASE("FrameDecoder splits many frames from one feed, including empty payloads") {
  std::vector<uint8_t> stream;
  for (int i = 0; i < 100; i++) {
    auto fr = (i % 2) ? encode_frame(Type::Ack, {}) : encode_frame(Type::Error, bytes_of("e"));
    stream.insert(stream.end(), fr.begin(), fr.end());
  }
  FrameDecoder d;
  d.feed(stream);
  auto got = drain(d);
  REQUIRE(got.size() == 100);
  CHECK(got[0].type == Type::Error);
  CHECK(got[1].type == Type::Ack);
  CHECK(got[1].payload.empty());
  CHECK(d.buffered() == 0);
}

TEST_CASE("FrameDecoder accepts a frame of exactly kMaxPayload") {
  FrameDecoder d;
  std::vector<uint8_t> payload(kMaxPayload, 0xab);
  d.feed(encode_frame(Type::Hello, payload));
  auto f = d.next();
  REQUIRE(f);
  CHECK(f->payload.size() == kMaxPayload);
}

TEST_CASE("FrameDecoder rejects an oversized length as soon as the header is in") {
  FrameDecoder d;
  CHECK_THROWS_AS(d.feed(header(kMaxPayload + 1, 1)), ProtoError);
  FrameDecoder e;
  CHECK_THROWS_AS(e.feed(header(0xffffffffu, 1)), ProtoError);
  // Split header: the check happens once all 8 bytes are there.
  FrameDecoder g;
  auto h = header(0xffffffffu, 1);
  g.feed({h.data(), 4});
  CHECK_THROWS_AS(g.feed({h.data() + 4, 4}), ProtoError);
}

TEST_CASE("FrameDecoder rejects a nonzero reserved field") {
  FrameDecoder d;
  CHECK_THROWS_AS(d.feed(header(0, 1, 1)), ProtoError);
  FrameDecoder e;
  CHECK_THROWS_AS(e.feed(header(0, 1, 0x8000)), ProtoError);
}

TEST_CASE("FrameDecoder rejects a bad header that follows a good frame in the same feed") {
  auto stream = encode_frame(Type::Ack, {});
  auto bad = header(kMaxPayload + 1, 1);
  stream.insert(stream.end(), bad.begin(), bad.end());
  FrameDecoder d;
  bool threw = false;
  try {
    d.feed(stream);
    while (d.next()) {
    }
  } catch (const ProtoError&) {
    threw = true;
  }
  CHECK(threw);
}

TEST_CASE("FrameDecoder passes unknown frame types through for the caller to refuse") {
  FrameDecoder d;
  d.feed(header(0, 0xbeef));
  auto f = d.next();
  REQUIRE(f);
  CHECK(static_cast<uint16_t>(f->type) == 0xbeef);
}

TEST_CASE("FrameDecoder survives random garbage: it throws or waits, never crashes") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 2000; round++) {
    FrameDecoder d;
    std::vector<uint8_t> junk(rng() % 64);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    // Keep lengths small often enough that some frames complete.
    if (junk.size() >= 8 && (round % 3 == 0)) {
      junk[1] = junk[2] = junk[3] = 0;
      junk[0] %= 32;
      junk[6] = junk[7] = 0;
    }
    try {
      d.feed(junk);
      while (auto f = d.next()) CHECK(f->payload.size() <= kMaxPayload);
    } catch (const ProtoError&) {
    }
  }
}

TEST_CASE("Hello round-trips") {
  Hello h;
  h.client = "space 0.1.0";
  h.time_ns = 42;
  h.sandbox = "b-1";
  h.flags = Hello::kImage;
  auto back = Hello::decode(h.encode());
  CHECK(back.version == kVersion);
  CHECK(back.client == "space 0.1.0");
  CHECK(back.time_ns == 42);
  CHECK(back.sandbox == "b-1");
  CHECK(back.flags == Hello::kImage);
  CHECK(Hello::decode(Hello{}.encode()).flags == 0);
  h.flags = Hello::kImage | Hello::kNetwork;
  CHECK(Hello::decode(h.encode()).flags == (Hello::kImage | Hello::kNetwork));
}

TEST_CASE("Hello of another version: only the version is read, so the mismatch can be named") {
  Writer w;  // a version-2 Hello: no flags field
  w.u32(2);
  w.str("space");
  w.raw(std::array<uint8_t, kEntropySize>{});
  w.u64(1);
  w.str("box");
  auto h = Hello::decode(w.buffer());
  CHECK(h.version == 2);
  CHECK(h.client.empty());
}

TEST_CASE("Hello rejects unknown flags") {
  Hello h;
  for (uint32_t f : {4u, 8u, 0x80000000u, 7u}) {
    h.flags = f;
    CHECK_THROWS_AS(Hello::decode(h.encode()), ProtoError);
  }
}

TEST_CASE("HelloReply round-trips") {
  HelloReply r;
  r.agent = "guest-init 0.1.0";
  r.hostname = "sbx-1";
  r.uptime_ms = 0x123456789abcULL;
  auto back = HelloReply::decode(r.encode());
  CHECK(back.version == kVersion);
  CHECK(back.agent == r.agent);
  CHECK(back.hostname == r.hostname);
  CHECK(back.uptime_ms == r.uptime_ms);
}

TEST_CASE("ErrorMsg round-trips, including embedded NULs and an empty message") {
  std::string msg("bad\0thing", 9);
  CHECK(ErrorMsg::decode(ErrorMsg{.message = msg}.encode()).message == msg);
  CHECK(ErrorMsg::decode(ErrorMsg{.message = ""}.encode()).message.empty());
}

TEST_CASE("Hello decode rejects truncated payloads at every length") {
  Hello h;
  h.client = "space";
  auto full = h.encode();
  for (size_t n = 0; n < full.size(); n++)
    CHECK_THROWS_AS(Hello::decode({full.data(), n}), ProtoError);
}

TEST_CASE("decoders reject trailing bytes") {
  auto h = Hello{}.encode();
  h.push_back(0);
  CHECK_THROWS_AS(Hello::decode(h), ProtoError);
  auto r = HelloReply{}.encode();
  r.push_back(0);
  CHECK_THROWS_AS(HelloReply::decode(r), ProtoError);
  auto e = ErrorMsg{.message = "x"}.encode();
  e.push_back(0);
  CHECK_THROWS_AS(ErrorMsg::decode(e), ProtoError);
}

TEST_CASE("a huge string length inside a payload throws without allocating it") {
  Writer w;
  w.u32(kVersion);
  w.u32(0xfffffff0u);  // claims a 4 GiB client string
  w.u8('x');
  CHECK_THROWS_AS(Hello::decode(w.buffer()), ProtoError);
  Writer e;
  e.u32(kMaxPayload);
  CHECK_THROWS_AS(ErrorMsg::decode(e.buffer()), ProtoError);
}

TEST_CASE("Reader::strs caps the element count before reserving") {
  Writer w;
  w.u32(0xffffffffu);
  Reader r(w.buffer());
  CHECK_THROWS_AS(r.strs(1024), ProtoError);
  Writer v;
  v.strs({"a", "bc", ""});
  Reader rv(v.buffer());
  auto got = rv.strs(3);
  rv.finish();
  CHECK(got == std::vector<std::string>{"a", "bc", ""});
  Writer t;
  t.u32(2);  // count says two, only one follows
  t.str("a");
  Reader rt(t.buffer());
  CHECK_THROWS_AS(rt.strs(8), ProtoError);
}

TEST_CASE("Reader never reads past its span") {
  uint8_t b[3] = {1, 2, 3};
  Reader r({b, 3});
  CHECK_THROWS_AS(r.u32(), ProtoError);
  CHECK(r.u16() == 0x0201);
  CHECK_THROWS_AS(r.u16(), ProtoError);
  CHECK(r.u8() == 3);
  CHECK_THROWS_AS(r.u8(), ProtoError);
  r.finish();
}

TEST_CASE("Hello carries entropy and the host time") {
  Hello h;
  h.client = "space";
  for (size_t i = 0; i < kEntropySize; i++) h.entropy[i] = static_cast<uint8_t>(i * 7 + 1);
  h.time_ns = 1'700'000'000'123'456'789ull;
  auto b = Hello::decode(h.encode());
  CHECK(b.entropy == h.entropy);
  CHECK(b.time_ns == h.time_ns);
  check_every_truncation_throws<Hello>(h.encode());
}
