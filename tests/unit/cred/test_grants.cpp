// Unit tests for cred/grants: grant specs and durations, and the grant table (ttl and uses
// against an injected clock, expiry logged once, revocation, forgetting a sandbox, strict JSON).
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "cred/grants.h"
#include "util/error.h"
#include "util/json.h"

using namespace space;
using namespace space::cred;

TEST_CASE("grant specs: NAME[:ttl=DURATION][:uses=N]") {
  auto g = parse_grant_spec("API_TOKEN");
  CHECK(g.name == "API_TOKEN");
  CHECK_FALSE(g.ttl_ms);
  CHECK_FALSE(g.uses);
  g = parse_grant_spec("db.pw:ttl=10m:uses=3");
  CHECK(g.name == "db.pw");
  CHECK(*g.ttl_ms == 600'000);
  CHECK(*g.uses == 3);
  CHECK(*parse_grant_spec("X:uses=1:ttl=2s").ttl_ms == 2000);
  CHECK(parse_duration_ms("30s") == 30'000);
  CHECK(parse_duration_ms("2h") == 7'200'000);
  CHECK(parse_duration_ms("1d") == 86'400'000);
  for (const char* bad :
       {"", ":ttl=1s", "a/b", "X:ttl=", "X:ttl=5", "X:ttl=0s", "X:ttl=-1s", "X:ttl=1w", "X:uses=0",
        "X:uses=x", "X:ttl=1s:ttl=2s", "X:foo=1", "X:ttl=99999999d"})
    CHECK_THROWS_AS(parse_grant_spec(bad), Error);
  CHECK(format_duration_ms(2000) == "2s");
  CHECK(format_duration_ms(5'400'000) == "1h30m");
}

TEST_CASE("grant table: ttl and uses against an injected clock") {
  GrantTable t;
  t.grant("a", parse_grant_spec("T:ttl=2s:uses=2"), 1'000'000);
  CHECK(t.check("a", "T", 1'000'000) == Verdict::Allow);
  CHECK(t.check("b", "T", 1'000'000) == Verdict::NotGranted);  // another sandbox
  CHECK(t.check("a", "U", 1'000'000) == Verdict::NotGranted);  // another name
  CHECK(t.consume("a", "T", 1'000'500) == Verdict::Allow);
  CHECK(t.consume("a", "T", 1'001'000) == Verdict::Allow);
  CHECK(t.consume("a", "T", 1'001'000) == Verdict::UsedUp);
  CHECK(t.check("a", "T", 1'002'000) == Verdict::Expired);
  CHECK(t.next_expiry() == 1'002'000u);
  CHECK(t.newly_expired(1'001'999).empty());
  auto e = t.newly_expired(1'002'000);
  REQUIRE(e.size() == 1);
  CHECK(e[0] == std::pair<std::string, std::string>("a", "T"));
  CHECK(t.newly_expired(1'009'000).empty());  // logged once
  CHECK_FALSE(t.next_expiry());
  // A new grant of the same name replaces the old one.
  t.grant("a", parse_grant_spec("T"), 2'000'000);
  CHECK(t.check("a", "T", 9'000'000'000) == Verdict::Allow);
  CHECK(t.grants_of("a").size() == 1);
}

TEST_CASE("grant table: revoke, revoke all, forget, and strict JSON") {
  GrantTable t;
  t.grant("a", parse_grant_spec("X"), 1);
  t.grant("a", parse_grant_spec("Y:uses=1"), 1);
  t.grant("b", parse_grant_spec("X:ttl=1m"), 1);
  CHECK(t.revoke("a", "X"));
  CHECK_FALSE(t.revoke("a", "X"));
  CHECK(t.check("a", "X", 2) == Verdict::NotGranted);
  auto back = GrantTable::from_json(json::parse(json::serialize(t.to_json())));
  CHECK(back.check("a", "Y", 2) == Verdict::Allow);
  CHECK(back.check("b", "X", 60'000) == Verdict::Allow);
  CHECK(back.check("b", "X", 60'001) == Verdict::Expired);
  CHECK(t.revoke_all("a", false) == std::vector<std::string>{"Y"});
  CHECK(t.has_sandbox("a"));  // keeps its socket: a fetch gets "not granted"
  t.revoke_all("b", true);
  CHECK_FALSE(t.has_sandbox("b"));
  CHECK_THROWS_AS(GrantTable::from_json(json::parse(
                      R"({"sandboxes":{"a":[{"name":"X","granted_ms":1,"extra":1}]}})")),
                  Error);
  CHECK_THROWS_AS(GrantTable::from_json(json::parse(R"({"sandboxes":{"../a":[]}})")), Error);
  CHECK_THROWS_AS(
      GrantTable::from_json(json::parse(
          R"({"sandboxes":{"a":[{"name":"X","granted_ms":1},{"name":"X","granted_ms":1}]}})")),
      Error);
}
