// Unit tests for util/daemon's lock and ready pipe: one holder per lock file, running() seeing
// it, claim() handing a second daemon's starter over to the first, and the ready lines.
#include <doctest/doctest.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "support/pipe_text.h"
#include "support/temp_dir.h"
#include "util/daemon.h"
#include "util/fd.h"

using namespace space;
using space::test::drain;

TEST_CASE("take_lock: one holder per lock file, seen by running()") {
  test::TempDir d("daemon");
  std::string lock = d.path + "/lock";
  CHECK_FALSE(daemon::running(lock));  // never started
  Fd first = daemon::take_lock(lock, 0);
  REQUIRE(first);
  CHECK(daemon::running(lock));
  CHECK_FALSE(daemon::take_lock(lock, 100));  // held: no second one, even after waiting
  first.reset();
  CHECK_FALSE(daemon::running(lock));
  CHECK(daemon::take_lock(lock, 0));  // released with its fd
}

TEST_CASE("claim: the first daemon keeps its ready pipe; a second reports ok and stands down") {
  test::TempDir d("daemon");
  std::string lock = d.path + "/lock";
  Pipe first_ready = Pipe::make();
  Fd first = daemon::claim(lock, 0, first_ready.write, "already running");
  REQUIRE(first);
  CHECK(first_ready.write);  // untouched: the daemon reports once it serves
  Pipe second_ready = Pipe::make();
  Fd second = daemon::claim(lock, 0, second_ready.write, "already running");
  CHECK_FALSE(second);
  CHECK_FALSE(second_ready.write);  // reported and closed
  CHECK(drain(second_ready) == "ok\n");
}

TEST_CASE("report_ready and report_start_failure write one line and close the pipe") {
  Pipe ok = Pipe::make();
  daemon::report_ready(ok.write);
  CHECK_FALSE(ok.write);
  CHECK(drain(ok) == "ok\n");
  Pipe bad = Pipe::make();
  CHECK(daemon::report_start_failure(bad.write, std::runtime_error("no socket")) == 1);
  CHECK_FALSE(bad.write);
  CHECK(drain(bad) == "error: no socket\n");
  // No pipe (a daemon started by hand): nothing to write, no error.
  Fd none;
  daemon::report_ready(none);
}
