// Unit tests for core/inspect (list and state, core/sandbox.h) against a stand-in VMM process:
// the observed status, and entries that are not sandboxes (or whose record names another one)
// skipped.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <string>

#include "core/sandbox.h"
#include "store/paths.h"
#include "support/fake_sandbox.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;
using space::test::FakeSandbox;

TEST_CASE("list and state report the observed status") {
  FakeSandbox f("alive");
  auto all = core::list_sandboxes(f.ctx);
  REQUIRE(all.size() == 1);
  CHECK(all[0].id == "alive");
  CHECK(all[0].status == store::Status::Running);
  ::kill(f.vmm.pid(), SIGKILL);
  while (!f.vmm.exited()) ::usleep(1000);
  CHECK(core::sandbox_state(f.ctx, "alive").status == store::Status::Stopped);
  CHECK(core::list_sandboxes(f.ctx)[0].status == store::Status::Stopped);
  fs::write_file_atomic(store::sandboxes_dir(f.ctx.root) + "/../junk", "");  // not a sandbox
  fs::mkdir_p(store::sandboxes_dir(f.ctx.root) + "/Bad-Name");               // invalid id: skipped
  CHECK(core::list_sandboxes(f.ctx).size() == 1);
  CHECK_THROWS_WITH_AS(core::sandbox_state(f.ctx, "nope"), "sandbox nope does not exist", Error);
}

TEST_CASE("list skips, and state refuses, a record that names another sandbox") {
  FakeSandbox f("orig");
  std::string copy = store::sandbox_paths(f.ctx.root, "orig-b1").dir;
  fs::mkdir_p(copy);
  fs::write_file_atomic(copy + "/state.json", fs::read_file(f.p.state));
  auto all = core::list_sandboxes(f.ctx);
  REQUIRE(all.size() == 1);
  CHECK(all[0].id == "orig");
  CHECK_THROWS_WITH_AS(core::sandbox_state(f.ctx, "orig-b1"),
                       "the record of sandbox orig-b1 names sandbox orig", Error);
}
