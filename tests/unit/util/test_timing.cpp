// Unit tests for util/timing: the monotonic readings in nanoseconds and milliseconds are one clock
// (the one std::chrono::steady_clock reads), and the wall clock is the epoch's.
#include <doctest/doctest.h>

#include <chrono>
#include <ctime>

#include "util/timing.h"

using namespace space;

TEST_CASE("timing: mono_ns, mono_ms and steady_clock read one clock; wall_ms the epoch's") {
  const int64_t steady_before = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now().time_since_epoch())
                                    .count();
  const int64_t ns = timing::mono_ns();
  const int64_t ms = timing::mono_ms();
  CHECK(ns >= steady_before);
  CHECK(ns - steady_before < 1'000'000'000);  // the same clock, not one with another origin
  CHECK(ms >= ns / 1'000'000);
  CHECK(ms - ns / 1'000'000 < 1000);
  const int64_t later = timing::mono_ns();
  CHECK(later >= ns);
  const uint64_t wall = timing::wall_ms();
  const uint64_t now_s = static_cast<uint64_t>(std::time(nullptr));
  CHECK(wall / 1000 + 1 >= now_s);
  CHECK(wall / 1000 <= now_s + 1);
}
