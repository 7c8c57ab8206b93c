// Unit tests for core/destroy (destroy, core/sandbox.h) against a stand-in VMM process: the
// recorded VMM is killed and both directories removed, a recycled pid is never signalled, and an
// unreadable state.json needs --force, and a record naming another sandbox (the source's, copied
// into an interrupted branch) never gets that sandbox's VMM signalled.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <string>

#include "core/sandbox.h"
#include "store/state.h"
#include "support/fake_sandbox.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;
using space::test::FakeSandbox;

TEST_CASE("destroy kills the recorded VMM and removes both directories") {
  FakeSandbox f("victim");
  core::destroy_sandbox(f.ctx, "victim", /*force=*/false);  // no control.sock: straight to SIGKILL
  CHECK(f.vmm.exited());
  CHECK(WIFSIGNALED(f.vmm.status()));
  CHECK_FALSE(fs::exists(f.p.dir));
  CHECK_FALSE(fs::exists(f.p.run_dir));
  CHECK_THROWS_WITH_AS(core::destroy_sandbox(f.ctx, "victim", false),
                       "sandbox victim does not exist", Error);
}

TEST_CASE("destroy never signals a recycled pid") {
  FakeSandbox f("recycled");
  auto st = store::read_state(f.p.state);
  st.pid_start_time += 1;  // the recorded process is gone; this pid now names another one
  store::write_state(f.p.state, st);
  core::destroy_sandbox(f.ctx, "recycled", /*force=*/true);
  CHECK_FALSE(f.vmm.exited());
  CHECK_FALSE(fs::exists(f.p.dir));
}

TEST_CASE("destroy with an unreadable state needs --force") {
  FakeSandbox f("broken");
  fs::write_file_atomic(f.p.state, "{oops");
  CHECK_THROWS_WITH_AS(core::destroy_sandbox(f.ctx, "broken", false),
                       doctest::Contains("invalid JSON"), Error);
  CHECK(fs::exists(f.p.dir));
  core::destroy_sandbox(f.ctx, "broken", true);
  CHECK_FALSE(fs::exists(f.p.dir));
}

TEST_CASE("destroy of a directory whose record names another sandbox leaves that VMM alone") {
  FakeSandbox f("source");
  std::string copy = store::sandbox_paths(f.ctx.root, "source-b1").dir;
  fs::mkdir_p(copy);
  fs::write_file_atomic(copy + "/state.json", fs::read_file(f.p.state));  // the source's record
  core::destroy_sandbox(f.ctx, "source-b1", /*force=*/true);
  CHECK_FALSE(f.vmm.exited());
  CHECK_FALSE(fs::exists(copy));
  CHECK(fs::exists(f.p.dir));
}
