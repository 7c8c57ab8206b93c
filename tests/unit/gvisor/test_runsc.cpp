// Unit tests for gvisor/runsc: every command line carries all of runsc's global flags (runsc
// keeps none between invocations), and version lines are read for their release date.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gvisor/runsc.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;

TEST_CASE("runsc: the global flags come with every command") {
  gvisor::RunscConfig c;
  c.binary = "/usr/bin/runsc";
  c.root = "/run/space/x/gvisor/runsc";
  c.overlay = "all:dir=/store/x/overlay";
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"create", "--bundle=/b", "x"},
        {"pause", "x"},
        {"kill", "x", "9"}}) {
    auto argv = gvisor::runsc_argv(c, cmd);
    CHECK(argv.front() == "/usr/bin/runsc");
    for (const char* flag :
         {"--root=/run/space/x/gvisor/runsc", "--platform=systrap", "--network=none",
          "--overlay2=all:dir=/store/x/overlay", "--host-uds=open"})
      CHECK(std::count(argv.begin(), argv.end(), flag) == 1);
    // The command follows the global flags, unchanged.
    CHECK(std::equal(cmd.begin(), cmd.end(), argv.end() - static_cast<long>(cmd.size())));
  }
}

TEST_CASE("runsc: release dates from version lines") {
  CHECK(gvisor::runsc_release("runsc version 0.0~20240729.0") == 20240729);
  CHECK(gvisor::runsc_release("runsc version release-20250106.0") == 20250106);
  CHECK(gvisor::runsc_release("runsc version 0.0~20221219.0") == 20221219);
  CHECK(gvisor::runsc_release("runsc version 1.2.3") == 0);
  CHECK(gvisor::runsc_release("") == 0);
  CHECK(gvisor::runsc_release("runsc version 123456789") == 0);  // nine digits: no date
}

TEST_CASE("runsc: a failing command is an error quoting its output") {
  test::TempDir t("runsc");
  gvisor::RunscConfig c;
  c.binary = t.path + "/runsc";
  c.root = t.path;
  fs::write_file_atomic(c.binary,
                        "#!/bin/sh\necho \"cannot pause: $7 is not running\" >&2\nexit 3\n", 0755);
  CHECK_THROWS_WITH_AS(gvisor::run_runsc(c, {"pause", "box"}),
                       doctest::Contains("runsc pause exited with status 3"), Error);
  CHECK_THROWS_WITH_AS(gvisor::run_runsc(c, {"pause", "box"}),
                       doctest::Contains("cannot pause: box is not running"), Error);
  CHECK(gvisor::runsc_version(c.binary).empty());  // not a version line
  CHECK(gvisor::runsc_version(t.path + "/none").empty());
}
