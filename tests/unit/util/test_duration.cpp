// Unit tests for util/duration: the accepted forms, the refusals with a hint in the caller's
// words, and the formatting.
#include <doctest/doctest.h>

#include <string>

#include "util/duration.h"
#include "util/error.h"

using namespace space;

TEST_CASE("durations: s, m, h, d") {
  CHECK(parse_duration_ms("1s", "--ttl ") == 1000);
  CHECK(parse_duration_ms("90s", "--ttl ") == 90'000);
  CHECK(parse_duration_ms("10m", "--ttl ") == 600'000);
  CHECK(parse_duration_ms("2h", "--ttl ") == 7'200'000);
  CHECK(parse_duration_ms("3d", "--ttl ") == 3ull * 86'400'000);
  for (const char* bad : {"", "s", "5", "0s", "-5s", "5x", "1.5h", "5 s", "99999999999999s"}) {
    CAPTURE(bad);
    try {
      parse_duration_ms(bad, "--ttl ");
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("invalid duration") != std::string::npos);
      CHECK(e.hint().find("--ttl 30s") != std::string::npos);  // the caller's own form
    }
  }
  try {
    parse_duration_ms("x", "ttl=");
  } catch (const Error& e) {
    CHECK(e.hint().find("ttl=10m") != std::string::npos);
  }
}

TEST_CASE("durations are formatted in whole seconds, rounded up") {
  CHECK(format_duration_ms(1) == "1s");
  CHECK(format_duration_ms(59'000) == "59s");
  CHECK(format_duration_ms(60'000) == "1m");
  CHECK(format_duration_ms(5'400'000) == "1h30m");
  CHECK(format_duration_ms(90'061'000) == "1d1h1m1s");
}
