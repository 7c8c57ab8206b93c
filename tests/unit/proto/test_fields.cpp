// Unit tests for proto/fields.h, the field lists every binary message and device state is coded
// from: the bytes of each field type, nested lists, When / Max / Cut, the strict bool, the check()
// after decoding, a list held outside its struct (FieldList), and the JSON written from the same
// list.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "proto/fields.h"
#include "util/error.h"

using namespace space;
using namespace space::proto;

namespace {

enum class Colour : uint16_t { Red = 1, Blue = 2 };

struct Inner {
  uint8_t a = 0;
  int64_t b = 0;
  template <class S, class F>
  static void fields(S& s, F&& f) {
    f("a", s.a);
    f("b", s.b);
  }
};

struct Sample {
  static constexpr uint32_t kNote = 1;
  uint32_t flags = 0;
  bool on = false;
  Colour colour = Colour::Red;
  int32_t delta = 0;
  std::string name;
  std::array<uint8_t, 3> raw{};
  std::vector<uint8_t> blob;
  std::vector<std::string> tags;
  std::vector<Inner> inners;
  std::string note;  // only with kNote
  template <class S, class F>
  static void fields(S& s, F&& f) {
    f("flags", s.flags);
    f("on", s.on);
    f("colour", s.colour);
    f("delta", s.delta);
    f("name", s.name, Cut{5});
    f("raw", s.raw);
    f("blob", s.blob, Max{4});
    f("tags", s.tags, Max{2});
    f("inners", s.inners);
    f("note", s.note, When{(s.flags & kNote) != 0});
  }
  void check() const {
    if (colour != Colour::Red && colour != Colour::Blue) throw ProtoError("unknown colour");
  }
};

// A struct from a lower layer: its list is held by a FieldList specialisation.
struct Outside {
  uint16_t port = 0;
};

}  // namespace

template <>
struct space::proto::FieldList<Outside> {
  template <class S, class F>
  static void fields(S& s, F&& f) {
    f("port", s.port);
  }
  static void check(const Outside& o) {
    if (o.port == 0) throw ProtoError("port 0");
  }
};

namespace {

Sample sample() {
  Sample s;
  s.on = true;
  s.colour = Colour::Blue;
  s.delta = -2;
  s.name = "ab";
  s.raw = {7, 8, 9};
  s.blob = {1, 2};
  s.tags = {"x"};
  s.inners = {{5, -1}};
  return s;
}

std::vector<uint8_t> expected_bytes() {
  Writer w;
  w.u32(0);     // flags
  w.u8(1);      // on
  w.u16(2);     // colour
  w.i32(-2);    // delta
  w.str("ab");  // name
  w.raw(std::array<uint8_t, 3>{7, 8, 9});
  w.bytes(std::vector<uint8_t>{1, 2});
  w.strs({"x"});
  w.u32(1);  // one inner
  w.u8(5);
  w.u64(static_cast<uint64_t>(-1));
  return std::move(w.buffer());  // no note: kNote is off
}

}  // namespace

TEST_CASE("a field list gives the bytes of each field, in order") {
  CHECK(encode_fields(sample()) == expected_bytes());
  Sample back = decode_fields<Sample>(expected_bytes());
  CHECK(back.on);
  CHECK(back.colour == Colour::Blue);
  CHECK(back.delta == -2);
  CHECK(back.name == "ab");
  CHECK(back.raw == std::array<uint8_t, 3>{7, 8, 9});
  CHECK(back.blob == std::vector<uint8_t>{1, 2});
  CHECK(back.tags == std::vector<std::string>{"x"});
  REQUIRE(back.inners.size() == 1);
  CHECK(back.inners[0].a == 5);
  CHECK(back.inners[0].b == -1);
  CHECK(back.note.empty());
}

TEST_CASE("When: a field is present only where its condition holds") {
  Sample s = sample();
  s.note = "hi";
  CHECK(encode_fields(s) == expected_bytes());  // flags say no note: it has no bytes
  s.flags = Sample::kNote;
  auto b = encode_fields(s);
  CHECK(b.size() == expected_bytes().size() + 4 + 2);
  CHECK(decode_fields<Sample>(b).note == "hi");
  // The condition is read from the decoded flags, so the note's bytes are expected.
  auto without = expected_bytes();
  without[0] = Sample::kNote;
  CHECK_THROWS_WITH_AS(decode_fields<Sample>(without), "message truncated", ProtoError);
}

TEST_CASE("Cut shortens a string when encoding; Max and Cut refuse longer ones when decoding") {
  Sample s = sample();
  s.name = "abcdefgh";
  CHECK(decode_fields<Sample>(encode_fields(s)).name == "abcde");
  Writer w;
  w.u32(0);
  w.u8(0);
  w.u16(1);
  w.i32(0);
  w.str("abcdef");  // one byte over
  CHECK_THROWS_WITH_AS(decode_fields<Sample>(w.buffer()),
                       doctest::Contains("field name: longer than 5 bytes"), ProtoError);
  s = sample();
  s.blob = {1, 2, 3, 4, 5};
  CHECK_THROWS_WITH_AS(decode_fields<Sample>(encode_fields(s)),
                       doctest::Contains("field blob: longer than 4 bytes"), ProtoError);
  s = sample();
  s.tags = {"a", "b", "c"};
  CHECK_THROWS_AS(decode_fields<Sample>(encode_fields(s)), ProtoError);
}

TEST_CASE("decoding refuses a bool other than 0 or 1, trailing bytes, and runs check()") {
  auto b = expected_bytes();
  b[4] = 2;  // on
  CHECK_THROWS_WITH_AS(decode_fields<Sample>(b), doctest::Contains("field on: not 0 or 1"),
                       ProtoError);
  b = expected_bytes();
  b.push_back(0);
  CHECK_THROWS_WITH_AS(decode_fields<Sample>(b), "trailing bytes in message", ProtoError);
  b = expected_bytes();
  b[5] = 3;  // colour
  CHECK_THROWS_WITH_AS(decode_fields<Sample>(b), "unknown colour", ProtoError);
  // A ProtoError is a space::Error, so main() and every catch of Error takes it.
  CHECK_THROWS_AS(decode_fields<Sample>(b), Error);
}

TEST_CASE("a list held outside its struct codes and checks the same way") {
  CHECK(encode_fields(Outside{8080}) == std::vector<uint8_t>{0x90, 0x1f});
  CHECK(decode_fields<Outside>(std::vector<uint8_t>{0x90, 0x1f}).port == 8080);
  CHECK_THROWS_WITH_AS(decode_fields<Outside>(std::vector<uint8_t>{0, 0}), "port 0", ProtoError);
  CHECK(json::serialize(fields_json(Outside{22})) == R"({"port":22})");
}

TEST_CASE("the JSON of a field list: one member per present field") {
  Sample s = sample();
  CHECK(json::serialize(fields_json(s)) ==
        R"({"flags":0,"on":true,"colour":2,"delta":-2,"name":"ab","raw":"BwgJ","blob":"AQI=",)"
        R"("tags":["x"],"inners":[{"a":5,"b":-1}]})");
  s.flags = Sample::kNote;
  s.note = "n";
  CHECK(fields_json(s).at("note").as_string() == "n");
}
