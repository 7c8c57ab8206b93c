// Unit tests for util/audit_throttle: a sandbox's records written one by one within its budget
// (a burst, then one a period) and the first of each kind always; the rest counted per kind and
// handed out once their window passed (or all at once); sandboxes apart; a sandbox's kinds
// capped; the line that stands for a count.
#include <doctest/doctest.h>

#include <string>

#include "util/audit_throttle.h"

using space::AuditThrottle;

TEST_CASE("AuditThrottle: a budget per sandbox, the first of each kind, the rest counted") {
  AuditThrottle t({.burst = 3, .period_ms = 1000, .window_ms = 60'000});
  const uint64_t t0 = 1'000'000;
  int written = 0;
  for (int i = 0; i < 100; i++) written += t.admit("a", "not granted", t0);
  CHECK(written == 3);
  CHECK(t.pending() == 97);
  CHECK(t.admit("a", "rate limited", t0));  // a new kind: its first is written
  CHECK_FALSE(t.admit("a", "rate limited", t0));
  CHECK(t.admit("b", "not granted", t0));         // another sandbox: its own budget
  CHECK(t.admit("a", "not granted", t0 + 1000));  // a second later: one more
  CHECK_FALSE(t.admit("a", "not granted", t0 + 1000));
  CHECK(t.due(t0 + 59'999).empty());  // the window has not passed
  auto due = t.due(t0 + 60'000);
  REQUIRE(due.size() == 2);
  CHECK(due[0].sandbox == "a");
  CHECK(due[0].kind == "not granted");
  CHECK(due[0].count == 98);
  CHECK(due[0].first_ms == t0);
  CHECK(due[1].kind == "rate limited");
  CHECK(due[1].count == 1);
  CHECK(t.pending() == 0);
  CHECK(AuditThrottle::describe(due[0], "denied", t0 + 60'000) ==
        "denied 98 requests of kind 'not granted' from sandbox a in the last 60 s (not audited "
        "one by one)");
  CHECK(AuditThrottle::describe(due[1], "failed", t0 + 1) ==
        "failed 1 request of kind 'rate limited' from sandbox a in the last 1 s (not audited one "
        "by one)");
}

TEST_CASE("AuditThrottle: everything at exit, kinds capped, a quiet sandbox forgotten") {
  AuditThrottle t({.burst = 1, .period_ms = 1000, .window_ms = 10'000});
  for (size_t k = 0; k <= AuditThrottle::kMaxKinds; k++)
    CHECK(t.admit("a", "kind " + std::to_string(k), 0));  // the first of each: written
  // Past the cap a kind is "other", which had its first: the rest are counted.
  CHECK_FALSE(t.admit("a", "kind 99", 0));
  CHECK_FALSE(t.admit("a", "kind 0", 0));
  auto all = t.due(5, /*all=*/true);
  REQUIRE(all.size() == 2);
  CHECK(all[0].kind == "kind 0");
  CHECK(all[1].kind == "other");
  CHECK(all[1].count == 1);
  // Quiet for a window: a full budget, and its kinds are new again.
  CHECK(t.due(10'000).empty());
  CHECK(t.admit("a", "kind 0", 10'000));
  CHECK(t.admit("a", "kind 1", 10'000));
  CHECK_FALSE(t.admit("a", "kind 1", 10'000));
}
