// Unit tests for proto/credd, the credential helper's operator protocol: every request and reply
// round-trips, the wire spelling stays the same, a set request carries its value only in base64
// and only in a wiped buffer (the value never sits in a json::Value), and every malformed request
// is an Error that names the problem.
#include <doctest/doctest.h>

#include <string>

#include "proto/credd.h"
#include "util/base64.h"
#include "util/error.h"

using namespace space;
namespace credd = space::proto::credd;

namespace {
template <class T>
T round_trip(credd::Request req) {
  SecretString line = credd::encode_request(req);
  credd::Request back = credd::decode_request(line.bytes);
  REQUIRE(std::holds_alternative<T>(back));
  return std::move(std::get<T>(back));
}
}  // namespace

TEST_CASE("credd requests round-trip and keep their wire names") {
  CHECK(credd::encode_request(credd::PingRequest{}).bytes == "{\"op\":\"ping\"}\n");
  CHECK(credd::encode_request(credd::RevokeAllRequest{"sb", true, "destroyed"}).bytes ==
        "{\"op\":\"revoke\",\"sandbox\":\"sb\",\"all\":true,\"forget\":true,\"reason\":"
        "\"destroyed\"}\n");
  // Any bytes survive the trip, NULs and quotes included.
  std::string value("a\0\"b\\\n\xff", 7);
  auto set = round_trip<credd::SetRequest>(credd::SetRequest{"TOKEN", SecretString(value)});
  CHECK(set.name == "TOKEN");
  CHECK(set.value.view() == value);
  SecretString line = credd::encode_request(credd::SetRequest{"T", SecretString(value)});
  CHECK(line.bytes.find(base64::encode(value)) != std::string::npos);
  CHECK(line.bytes.find("b\\") == std::string::npos);  // the raw value is not on the wire
  CHECK(round_trip<credd::RemoveRequest>(credd::RemoveRequest{"X"}).name == "X");
  auto g = round_trip<credd::GrantRequest>(credd::GrantRequest{"sb", "N", 5000, 2});
  CHECK(g.sandbox == "sb");
  CHECK(g.ttl_ms == 5000u);
  CHECK(g.uses == 2u);
  auto g2 = round_trip<credd::GrantRequest>(credd::GrantRequest{"sb", "N", {}, {}});
  CHECK_FALSE(g2.ttl_ms);
  CHECK_FALSE(g2.uses);
  auto r = round_trip<credd::RevokeRequest>(credd::RevokeRequest{"sb", "N", "space revoke"});
  CHECK(r.name == "N");
  CHECK(r.reason == "space revoke");
  auto ra = round_trip<credd::RevokeAllRequest>(credd::RevokeAllRequest{"sb", false, ""});
  CHECK(ra.sandbox == "sb");
  CHECK_FALSE(ra.forget);
  auto c = round_trip<credd::CopyRequest>(credd::CopyRequest{"a", "b"});
  CHECK((c.from == "a" && c.to == "b"));
  CHECK(round_trip<credd::GrantsRequest>(credd::GrantsRequest{}).sandbox.empty());
  CHECK(round_trip<credd::GrantsRequest>(credd::GrantsRequest{"sb"}).sandbox == "sb");
  CHECK(credd::op_name(credd::RevokeAllRequest{}) == "revoke");
  CHECK(credd::op_name(credd::RevokeRequest{}) == "revoke");
  CHECK(credd::op_name(credd::GrantsRequest{}) == "grants");
}

TEST_CASE("credd replies round-trip; list and grants print as the CLI's JSON") {
  CHECK(credd::decode_reply<credd::PingReply>(credd::encode_reply(credd::PingReply{12})).pid == 12);
  CHECK(credd::decode_reply<credd::SetReply>(credd::encode_reply(credd::SetReply{true})).replaced);
  credd::ListReply l{{{"A", 3, "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"}}};
  auto l2 = credd::decode_reply<credd::ListReply>(credd::encode_reply(l));
  REQUIRE(l2.secrets.size() == 1);
  CHECK(l2.secrets[0].size == 3);
  CHECK(l2.secrets[0].updated == "2026-01-02T00:00:00Z");
  CHECK(json::serialize(credd::to_json(l.secrets[0])) ==
        "{\"name\":\"A\",\"size\":3,\"created\":\"2026-01-01T00:00:00Z\","
        "\"updated\":\"2026-01-02T00:00:00Z\"}");
  credd::GrantsReply g;
  g.grants.push_back({"sb", "A", "t0", std::nullopt, 2, "active"});
  g.grants.push_back({"sb", "B", "t0", std::string("t1"), std::nullopt, "expired"});
  auto g2 = credd::decode_reply<credd::GrantsReply>(credd::encode_reply(g));
  REQUIRE(g2.grants.size() == 2);
  CHECK_FALSE(g2.grants[0].expires);
  CHECK(g2.grants[0].uses_left == 2u);
  CHECK(g2.grants[1].expires == "t1");
  CHECK_FALSE(g2.grants[1].uses_left);
  CHECK(json::serialize(credd::to_json(g.grants[0])) ==
        "{\"sandbox\":\"sb\",\"name\":\"A\",\"granted\":\"t0\",\"expires\":null,\"uses_left\":2,"
        "\"state\":\"active\"}");
  CHECK(credd::decode_reply<credd::RevokeAllReply>(
            credd::encode_reply(credd::RevokeAllReply{{"x", "y"}}))
            .revoked == std::vector<std::string>{"x", "y"});
  CHECK(
      credd::decode_reply<credd::CopyReply>(credd::encode_reply(credd::CopyReply{{"x"}})).copied ==
      std::vector<std::string>{"x"});
  CHECK_NOTHROW(credd::decode_reply<credd::Done>(credd::encode_reply(credd::Done{})));
  CHECK_THROWS_WITH_AS(credd::decode_reply<credd::ListReply>("{\"ok\":true,\"secrets\":[{}]}"),
                       doctest::Contains("\"name\" is missing"), Error);
}

TEST_CASE("malformed credd requests are refused, naming the problem") {
  auto refused = [](const std::string& line, const std::string& why) {
    CAPTURE(line);
    CHECK_THROWS_WITH_AS(credd::decode_request(line), doctest::Contains(why.c_str()), Error);
  };
  refused("", "invalid JSON");
  refused("{\"op\":\"steal\"}", "unknown credential helper operation \"steal\"");
  refused("{\"op\":\"list\",\"all\":true}", "unknown field \"all\"");
  refused("{\"op\":\"set\",\"name\":\"A\"}", "\"value_base64\" is missing");
  refused("{\"op\":\"set\",\"name\":\"A\",\"value_base64\":\"!!\"}", "not base64");
  refused("{\"op\":\"set\",\"name\":\"A\",\"value_base64\":7}", "expected a string");
  refused("{\"op\":\"grant\",\"sandbox\":\"s\",\"name\":\"A\",\"uses\":-1}", "out of range");
  refused("{\"op\":\"grant\",\"sandbox\":\"s\",\"name\":\"A\",\"ttl_ms\":\"1h\"}",
          "expected an integer");
  refused("{\"op\":\"revoke\",\"sandbox\":\"s\"}", "\"name\" is missing");
  refused("{\"op\":\"revoke\",\"sandbox\":\"s\",\"all\":true,\"name\":\"A\"}",
          "unknown field \"name\"");
  refused("{\"op\":\"copy\",\"from\":\"a\"}", "\"to\" is missing");
  refused("{\"op\":\"rm\",\"name\":\"A\",\"x\":0}", "credential helper request \"rm\"");
}

TEST_CASE("json::SecretMembers keeps secret strings out of the tree") {
  json::SecretMembers s{{"v"}, {}};
  json::Value doc = json::parse(R"({"a":{"v":"hidden"},"v":"two","w":"shown"})", {.secrets = &s});
  REQUIRE(s.found.size() == 2);
  CHECK(s.found[0].view() == "hidden");
  CHECK(s.found[1].view() == "two");
  CHECK(doc.at("a").at("v").as_int() == 0);  // the index into found, not the value
  CHECK(doc.at("v").as_int() == 1);
  CHECK(doc.at("w").as_string() == "shown");
  CHECK(json::serialize(doc).find("hidden") == std::string::npos);
  json::SecretMembers t{{"v"}, {}};
  CHECK_THROWS_AS(json::parse(R"({"v":1})", {.secrets = &t}), Error);
}

TEST_CASE("credd: the sandbox ids each request names, for the helper to validate") {
  using V = std::vector<std::string>;
  CHECK(credd::sandbox_ids(credd::PingRequest{}).empty());
  CHECK(credd::sandbox_ids(credd::ListRequest{}).empty());
  CHECK(credd::sandbox_ids(credd::RemoveRequest{"T"}).empty());
  CHECK(credd::sandbox_ids(credd::GrantRequest{"sb", "T", {}, {}, {}}) == V{"sb"});
  CHECK(credd::sandbox_ids(credd::RevokeRequest{"sb", "T", ""}) == V{"sb"});
  CHECK(credd::sandbox_ids(credd::RevokeAllRequest{"sb", true, ""}) == V{"sb"});
  CHECK(credd::sandbox_ids(credd::CopyRequest{"a", "b"}) == V{"a", "b"});
  CHECK(credd::sandbox_ids(credd::GrantsRequest{""}).empty());  // every sandbox's
  CHECK(credd::sandbox_ids(credd::GrantsRequest{"sb"}) == V{"sb"});
  CHECK(credd::sandbox_ids(credd::BindingsRequest{"sb", "h", 443}) == V{"sb"});
  credd::SwapRequest swap;
  swap.sandbox = "../x";  // named as given: validating is the helper's
  CHECK(credd::sandbox_ids(swap) == V{"../x"});
  credd::RevokeAllRequest empty;
  CHECK(credd::sandbox_ids(empty) == V{""});  // "" names no sandbox: refused, not "all"
}
