// Unit tests for core/create (create, core/sandbox.h) that need no KVM: option conflicts and a
// bad template name fail before anything is made.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <string>

#include "core/sandbox.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;

TEST_CASE("create: option conflicts and a missing named template fail before anything is made") {
  test::TempDir t("template");
  ::setenv("SPACE_RUN_DIR", (t.path + "/run").c_str(), 1);
  store::Context ctx{t.path + "/root"};
  core::CreateOptions o;
  o.id = "x";
  o.template_name = "py3";
  o.cold = true;
  CHECK_THROWS_WITH_AS(core::create_sandbox(ctx, o), doctest::Contains("--cold and --template"),
                       Error);
  o.cold = false;
  o.vcpus = 2;
  CHECK_THROWS_WITH_AS(core::create_sandbox(ctx, o), doctest::Contains("cold-boot settings"),
                       Error);
  o.vcpus.reset();
  o.template_name = "Bad";
  CHECK_THROWS_WITH_AS(core::create_sandbox(ctx, o), doctest::Contains("invalid template name"),
                       Error);
  CHECK_FALSE(fs::exists(t.path + "/root/store"));
  ::unsetenv("SPACE_RUN_DIR");
}
