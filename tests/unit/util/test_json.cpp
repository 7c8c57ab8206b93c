// Unit tests for util/json: parsing, serialising, round trips, escapes and malformed input.
#include <doctest/doctest.h>

#include <string>

#include "util/error.h"
#include "util/json.h"

using space::json::Value;
namespace json = space::json;

namespace {
std::string parse_error(std::string_view text) {
  try {
    json::parse(text);
  } catch (const space::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("scalars parse to the right kinds") {
  CHECK(json::parse("null").is_null());
  CHECK(json::parse("true").as_bool() == true);
  CHECK(json::parse(" false ").as_bool() == false);
  CHECK(json::parse("42").as_int() == 42);
  CHECK(json::parse("-0").as_int() == 0);
  CHECK(json::parse("-9223372036854775808").as_int() == INT64_MIN);
  CHECK(json::parse("9223372036854775808").kind() == json::Kind::Double);  // beyond int64
  CHECK(json::parse("1.5").as_double() == 1.5);
  CHECK(json::parse("1e3").kind() == json::Kind::Double);
  CHECK(json::parse("-2.5E-1").as_double() == -0.25);
  CHECK(json::parse("\"hi\"").as_string() == "hi");
}

TEST_CASE("objects keep insertion order and round-trip") {
  const char* text = R"({"b":1,"a":[true,null,"x",{"z":-1.25}],"c":{}})";
  Value v = json::parse(text);
  REQUIRE(v.is_object());
  CHECK(v.as_object()[0].first == "b");
  CHECK(v.as_object()[1].first == "a");
  CHECK(json::serialize(v) == text);
  CHECK(json::parse(json::serialize(v, 2)) == v);
  CHECK(json::serialize(json::parse("[]"), 2) == "[]");
  CHECK(json::serialize(json::parse("{\"a\":[1]}"), 2) == "{\n  \"a\": [\n    1\n  ]\n}");
}

TEST_CASE("building values") {
  Value v;
  v.set("id", "x");
  v.set("n", uint64_t{7});
  v.set("big", uint64_t{UINT64_MAX});
  v.set("id", "y");  // replaces
  Value arr = Value::array();
  arr.push_back(1);
  arr.push_back("two");
  v.set("arr", arr);
  CHECK(json::serialize(v) == R"({"id":"y","n":7,"big":18446744073709551616.0,"arr":[1,"two"]})");
  CHECK(v.at("n").as_int() == 7);
  CHECK(v.find("missing") == nullptr);
  CHECK_THROWS_AS(v.at("missing"), space::Error);
  CHECK_THROWS_AS(v.at("id").as_int(), space::Error);
}

TEST_CASE("doubles stay doubles across a round trip") {
  CHECK(json::serialize(Value(2.0)) == "2.0");
  CHECK(json::parse(json::serialize(Value(2.0))).kind() == json::Kind::Double);
  CHECK(json::parse(json::serialize(Value(0.1))).as_double() == 0.1);
  CHECK(json::serialize(Value(1.0 / 0.0)) == "null");
}

TEST_CASE("string escapes") {
  CHECK(json::parse(R"("a\"b\\c\/d\b\f\n\r\t")").as_string() == "a\"b\\c/d\b\f\n\r\t");
  CHECK(json::parse(R"("\u0041\u00e9\u20ac")").as_string() == "A\xC3\xA9\xE2\x82\xAC");
  CHECK(json::parse(R"("\ud83d\ude00")").as_string() == "\xF0\x9F\x98\x80");  // surrogate pair
  CHECK(json::parse(R"("\u0000")").as_string() == std::string(1, '\0'));
  CHECK(json::serialize(Value(std::string("q\"\\\n\x01\x7f", 6))) == R"("q\"\\\n\u0001\u007f")");
  CHECK(json::serialize(Value("\xC3\xA9")) == "\"\xC3\xA9\"");  // UTF-8 passes through
  CHECK(json::serialize(Value("a\xFF"
                              "b")) ==
        "\"a\xEF\xBF\xBD"
        "b\"");  // invalid byte -> U+FFFD
  std::string all;
  for (int c = 1; c < 128; c++) all += static_cast<char>(c);
  CHECK(json::parse(json::serialize(Value(all))).as_string() == all);
}

TEST_CASE("malformed input is rejected with a position") {
  CHECK(parse_error("") == "invalid JSON at line 1, column 1: unexpected end of input");
  CHECK(parse_error("{\"a\":1,}") == "invalid JSON at line 1, column 8: expected a string key");
  CHECK(parse_error("[1,\n 2,\n x]").find("line 3, column 2") != std::string::npos);
  CHECK(parse_error("[1 2]").find("expected ',' or ']'") != std::string::npos);
  CHECK(parse_error("{\"a\":1,\"a\":2}").find("duplicate key") != std::string::npos);
  CHECK(parse_error("01").find("leading zero") != std::string::npos);
  CHECK(parse_error("1.").find("after '.'") != std::string::npos);
  CHECK(parse_error("1e").find("exponent") != std::string::npos);
  CHECK(parse_error("-").find("expected a digit") != std::string::npos);
  CHECK(parse_error("1e999").find("out of range") != std::string::npos);
  CHECK(parse_error("tru").find("invalid literal") != std::string::npos);
  CHECK(parse_error("\"abc").find("unterminated string") != std::string::npos);
  CHECK(parse_error("\"a\tb\"").find("control character") != std::string::npos);
  CHECK(parse_error(R"("\x")").find("invalid escape") != std::string::npos);
  CHECK(parse_error(R"("\u12g4")").find("invalid hex digit") != std::string::npos);
  CHECK(parse_error(R"("\ud800")").find("lone high surrogate") != std::string::npos);
  CHECK(parse_error(R"("\ud800\u0041")").find("invalid surrogate pair") != std::string::npos);
  CHECK(parse_error(R"("\udc00")").find("lone low surrogate") != std::string::npos);
  CHECK(parse_error("\"\xC0\xAF\"").find("invalid UTF-8") != std::string::npos);      // overlong
  CHECK(parse_error("\"\xED\xA0\x80\"").find("invalid UTF-8") != std::string::npos);  // surrogate
  CHECK(parse_error("\"\xE2\x82\"").find("invalid UTF-8") != std::string::npos);      // truncated
  CHECK(parse_error("{} x").find("unexpected data after") != std::string::npos);
  CHECK(parse_error("{'a':1}").find("expected a string key") != std::string::npos);
  CHECK(parse_error("[1,2").find("unexpected end of input") != std::string::npos);
}

TEST_CASE("nesting depth is limited") {
  std::string ok(128, '['), deep(129, '[');
  ok += std::string(128, ']');
  deep += std::string(129, ']');
  CHECK_NOTHROW(json::parse(ok));
  CHECK(parse_error(deep).find("nesting deeper than 128") != std::string::npos);
  std::string huge(100000, '[');  // must fail cleanly, not overflow the stack
  CHECK(parse_error(huge).find("nesting") != std::string::npos);
}

TEST_CASE("record field readers name the field") {
  Value v = json::parse(R"({"s":"x","n":5,"neg":-1,"nul":null,"f":1.5})");
  CHECK(json::string_field(v, "s") == "x");
  CHECK(json::string_field_or(v, "nul", "d") == "d");
  CHECK(json::uint_field(v, "n", 10) == 5);
  CHECK(json::uint_field_or(v, "absent", 10, 3) == 3);
  auto msg = [&](auto fn) {
    try {
      fn();
    } catch (const space::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(msg([&] { json::uint_field(v, "n", 4); }) == "field \"n\": 5 is out of range 0..4");
  CHECK(msg([&] { json::uint_field(v, "neg"); }).find("out of range") != std::string::npos);
  CHECK(msg([&] { json::uint_field(v, "f"); }) ==
        "field \"f\": expected an integer, found a number");
  CHECK(msg([&] { json::string_field(v, "n"); }) ==
        "field \"n\": expected a string, found an integer");
  CHECK(msg([&] { json::string_field(v, "absent"); }) == "field \"absent\" is missing");
}
