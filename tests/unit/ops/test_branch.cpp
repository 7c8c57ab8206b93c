// Unit tests for core/branch's copy of the source (left_out_of_branch, core/session.h): the
// source's record, checkpoint, logs and lock stay out of a branch, its disk and config go in.
// (A branch interrupted after the copy must not hold a record naming the source and its VMM.)
#include <doctest/doctest.h>

#include <string>

#include "core/session_util.h"
#include "ops/branch.h"
#include "store/paths.h"

using namespace space;

TEST_CASE("a branch's copy leaves out the source's record, checkpoint, logs and lock") {
  store::SandboxPaths p = store::sandbox_paths("/srv/space", "src");
  auto rel = [&](const std::string& path) { return path.substr(p.dir.size() + 1); };
  CHECK(core::left_out_of_branch(p, rel(p.state)));
  CHECK(core::left_out_of_branch(p, rel(core::checkpoint_dir(p))));
  CHECK(core::left_out_of_branch(p, rel(core::checkpoint_dir(p)) + ".tmp"));
  CHECK(core::left_out_of_branch(p, rel(p.vmm_log)));
  CHECK(core::left_out_of_branch(p, rel(p.console_log)));
  CHECK(core::left_out_of_branch(p, rel(p.lock)));
  CHECK_FALSE(core::left_out_of_branch(p, rel(p.rootfs)));
  CHECK_FALSE(core::left_out_of_branch(p, rel(p.config)));
}
