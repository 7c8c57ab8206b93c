// Unit tests for proto/rpc, the line envelope: request and reply lines, the one place exceptions
// become {"ok": false} replies, and how a reply line is opened.
#include <doctest/doctest.h>

#include <stdexcept>

#include "proto/rpc.h"
#include "util/error.h"

using namespace space;
namespace rpc = space::proto::rpc;

TEST_CASE("rpc: request and reply lines") {
  json::Value f = json::Value::object();
  f.set("a", 1);
  CHECK(rpc::request_line("go", f) == "{\"op\":\"go\",\"a\":1}\n");
  CHECK(rpc::request_line("go", {}) == "{\"op\":\"go\"}\n");
  CHECK(rpc::ok_line(f) == "{\"ok\":true,\"a\":1}\n");
  CHECK(rpc::error_line("no", "fix it") == "{\"ok\":false,\"error\":\"no\",\"hint\":\"fix it\"}\n");
  CHECK(rpc::error_line("", "") == "{\"ok\":false,\"error\":\"failed without a message\"}\n");
  CHECK(rpc::op_of(json::parse("{\"op\":\"x\"}")) == "x");
  CHECK_THROWS_AS(rpc::op_of(json::parse("{\"op\":null}")), Error);
}

TEST_CASE("rpc: answer turns every exception into an error reply") {
  CHECK(rpc::answer([] { return rpc::ok_line({}); }) == "{\"ok\":true}\n");
  CHECK(rpc::answer([]() -> std::string { throw Error("bad", 0, "hint"); }) ==
        "{\"ok\":false,\"error\":\"bad\",\"hint\":\"hint\"}\n");
  CHECK(rpc::answer([]() -> std::string { throw std::runtime_error("odd"); }) ==
        "{\"ok\":false,\"error\":\"odd\"}\n");
}

TEST_CASE("rpc: open_reply") {
  CHECK(rpc::open_reply("{\"ok\":true,\"n\":2}", "peer").at("n").as_int() == 2);
  CHECK_THROWS_WITH_AS(rpc::open_reply("{\"ok\":false}", "the peer"),
                       "the peer refused the request", Error);
  CHECK_THROWS_WITH_AS(rpc::open_reply("{\"ok\":1}", "the peer"),
                       doctest::Contains("malformed reply from the peer"), Error);
  CHECK_THROWS_WITH_AS(rpc::open_reply("nope", "the peer"),
                       doctest::Contains("malformed reply from the peer"), Error);
  CHECK(rpc::bool_field_or(json::parse("{}"), "x", true));
  CHECK_THROWS_AS(rpc::bool_field_or(json::parse("{\"x\":0}"), "x", true), Error);
  CHECK_THROWS_WITH_AS(rpc::only_fields(json::parse("{\"op\":\"a\",\"y\":0}"), {"x"}),
                       "unknown field \"y\"", Error);
}
