// Unit tests for core/expiry: setting and reading a sandbox's expiry, the flag's checks, and what
// the reaper does with a sandbox that has not expired or has no VMM (nothing).
#include <doctest/doctest.h>

#include <ctime>

#include "core/expiry.h"
#include "ops/reaper.h"
#include "store/state.h"
#include "support/fake_sandbox.h"
#include "util/error.h"

using namespace space;

TEST_CASE("an expiry is set from a ttl, read back, and cleared") {
  store::SandboxState st;
  st.id = "e1";
  int64_t before = ::time(nullptr);
  core::set_expiry(st, 90'000, "destroy");
  CHECK(st.on_expiry == "destroy");
  int64_t at = core::expires_at(st);
  CHECK(at >= before + 90);
  CHECK(at <= ::time(nullptr) + 91);
  core::set_expiry(st, 1500, "checkpoint");  // rounded up to whole seconds
  CHECK(st.on_expiry == "checkpoint");
  CHECK(core::expires_at(st) >= before + 2);
  core::set_expiry(st, 0, "destroy");
  CHECK(st.expires.empty());
  CHECK(st.on_expiry.empty());
  CHECK(core::expires_at(st) == 0);
  CHECK_THROWS_WITH_AS(core::set_expiry(st, 1000, "pause"), doctest::Contains("--on-expiry"),
                       Error);
}

TEST_CASE("the reaper leaves a sandbox alone before its time, and one without a VMM") {
  test::FakeSandbox sb("e2");
  store::SandboxState st = store::read_state(sb.p.state);
  core::set_expiry(st, 3'600'000, "destroy");
  store::write_state(sb.p.state, st);
  CHECK(ops::expire_sandbox(sb.ctx, "e2") == "");  // an hour to go
  st.expires = store::rfc3339(::time(nullptr) - 10);
  st.status = store::Status::Checkpointed;
  st.pid = 0;
  store::write_state(sb.p.state, st);
  CHECK(ops::expire_sandbox(sb.ctx, "e2") == "");  // no VMM: nothing runs on past its time
  CHECK(space::fs::exists(sb.p.state));
}
