// Unit tests for store/loop that need no loop device and mount nothing: a missing image fails
// before /dev/loop-control is opened. Attaching and mounting need root and are covered by the
// template integration test (40_template.sh).
#include <doctest/doctest.h>
#include <errno.h>

#include <string>

#include "store/loop.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;

TEST_CASE("loop::mount_image: a missing image is an error naming it, and nothing is mounted") {
  test::TempDir d("loop");
  fs::mkdir_p(d.path + "/mnt");
  std::string image = d.path + "/missing.img";
  try {
    store::loop::mount_image(image, d.path + "/mnt", "btrfs", 0, "");
    FAIL("mounted a missing image");
  } catch (const Error& e) {
    CHECK(e.err() == ENOENT);
    CHECK(std::string(e.what()).rfind("open " + image + ": ", 0) == 0);
  }
  CHECK(fs::list_dir(d.path + "/mnt").empty());
}
