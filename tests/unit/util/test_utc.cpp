// Unit tests for util/utc: the calendar conversion agrees with gmtime_r and timegm over four
// centuries and around the epoch, leap days included, both ways; the RFC 3339 forms; parse()
// takes exactly what rfc3339() writes and refuses impossible dates and other shapes.
#include <doctest/doctest.h>
#include <time.h>

#include <string>

#include "util/utc.h"

using namespace space;

TEST_CASE("utc: from_unix and to_unix agree with gmtime_r and timegm") {
  // Every 3 days 7 hours 13 minutes 17 seconds from 1900 to 2300, and each second around the epoch.
  auto check = [](int64_t t) {
    time_t tt = static_cast<time_t>(t);
    tm g{};
    REQUIRE(gmtime_r(&tt, &g) != nullptr);
    utc::Civil c = utc::from_unix(t);
    CHECK(c.year == g.tm_year + 1900);
    CHECK(c.month == g.tm_mon + 1);
    CHECK(c.day == g.tm_mday);
    CHECK(c.hour == g.tm_hour);
    CHECK(c.minute == g.tm_min);
    CHECK(c.second == g.tm_sec);
    CHECK(utc::to_unix(c) == t);
  };
  for (int64_t t = -2208988800LL; t < 10413792000LL; t += 3 * 86400 + 7 * 3600 + 13 * 60 + 17)
    check(t);
  for (int64_t t = -100000; t < 100000; t += 37) check(t);
}

TEST_CASE("utc: leap days and the ends of months") {
  CHECK(utc::rfc3339(951782400) == "2000-02-29T00:00:00Z");     // 2000 is a leap year
  CHECK(utc::rfc3339(4107542400LL) == "2100-03-01T00:00:00Z");  // 2100 is not
  CHECK(utc::rfc3339(0) == "1970-01-01T00:00:00Z");
  CHECK(utc::rfc3339(-1) == "1969-12-31T23:59:59Z");
  CHECK(utc::rfc3339_ms(1796238453123ULL) == "2026-12-02T19:07:33.123Z");
}

TEST_CASE("utc: parse takes what rfc3339 writes, and nothing else") {
  for (int64_t t : {0LL, 951782400LL, 1796238453LL, 4102444799LL})
    CHECK(utc::parse(utc::rfc3339(t)) == t);
  CHECK(utc::parse("2024-02-29T12:00:00Z").has_value());
  CHECK_FALSE(utc::parse("2023-02-29T12:00:00Z"));  // not a leap year
  CHECK_FALSE(utc::parse("2026-04-31T00:00:00Z"));
  CHECK_FALSE(utc::parse("2026-13-01T00:00:00Z"));
  CHECK_FALSE(utc::parse("2026-00-01T00:00:00Z"));
  CHECK_FALSE(utc::parse("2026-12-02T24:00:00Z"));
  CHECK_FALSE(utc::parse("2026-12-02T23:60:00Z"));
  CHECK_FALSE(utc::parse("2026-12-02T23:59:60Z"));
  CHECK_FALSE(utc::parse("2026-12-02 23:59:59Z"));
  CHECK_FALSE(utc::parse("2026-12-02T23:59:59"));
  CHECK_FALSE(utc::parse("2026-12-02T23:59:59.000Z"));
  CHECK_FALSE(utc::parse("+026-12-02T23:59:59Z"));
  CHECK_FALSE(utc::parse(""));
}
