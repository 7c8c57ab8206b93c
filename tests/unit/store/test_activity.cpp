// Unit tests for store/activity: a command's shared hold keeps the reaper's claim off, a claim
// keeps a non-waiting hold off (which still marks the time), a waiting hold waits for the claim
// to end, a missing file is made with the sandbox's creation time, and the times move.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "store/activity.h"
#include "support/temp_dir.h"

using namespace space;

namespace {
int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

TEST_CASE("activity: a hold keeps the claim off, and a claim a non-waiting hold") {
  test::TempDir dir("activity");
  const std::string path = dir.path + "/activity";
  CHECK_FALSE(store::activity_mtime_ms(path).has_value());
  const int64_t made = wall_ms() - 3'600'000;  // an hour ago
  {
    auto claim = store::IdleClaim::try_take(path, made);
    REQUIRE(claim.has_value());
    CHECK(claim->last_used_ms() == made);  // a new file: the sandbox's creation time
    store::ActivityHold quick(path, store::ActivityHold::Wait::NonBlocking);
    CHECK_FALSE(quick.held());
    CHECK_FALSE(store::IdleClaim::try_take(path, made).has_value());  // one claim at a time
  }
  CHECK(*store::activity_mtime_ms(path) >= wall_ms() - 5000);  // the quick use marked the time
  {
    store::ActivityHold use(path);
    CHECK(use.held());
    CHECK_FALSE(store::IdleClaim::try_take(path, made).has_value());
    store::ActivityHold another(path, store::ActivityHold::Wait::NonBlocking);
    CHECK(another.held());  // uses share
  }
  auto claim = store::IdleClaim::try_take(path, made);
  REQUIRE(claim.has_value());
  CHECK(claim->last_used_ms() >= wall_ms() - 5000);
}

TEST_CASE("activity: a waiting hold waits for the claim to end") {
  test::TempDir dir("activity");
  const std::string path = dir.path + "/activity";
  auto claim = store::IdleClaim::try_take(path, wall_ms());
  REQUIRE(claim.has_value());
  std::atomic<bool> got{false};
  std::thread user([&] {
    store::ActivityHold use(path);
    got = use.held();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  CHECK_FALSE(got.load());
  claim.reset();
  user.join();
  CHECK(got.load());
}

TEST_CASE("activity: a sandbox whose directory is gone is held by nobody") {
  test::TempDir dir("activity");
  store::ActivityHold use(dir.path + "/gone/activity");
  CHECK_FALSE(use.held());
  CHECK_FALSE(store::IdleClaim::try_take(dir.path + "/gone/activity", 0).has_value());
}
