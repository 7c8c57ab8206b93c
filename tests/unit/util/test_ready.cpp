// Unit tests for util/ready: the ready line a daemon writes to its starter ("ok", or "error:
// <message> (<hint>)"), nothing written when there is no ready fd, and the exit code 1.
#include <doctest/doctest.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "support/pipe_text.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/ready.h"

using namespace space;
using space::test::drain;

TEST_CASE("ready::report_line writes one line, or nothing without a ready fd") {
  Pipe p = Pipe::make();
  ready::report_line(p.write, "ok");
  ready::report_line(p.write, "second");
  CHECK(drain(p) == "ok\nsecond\n");
  Fd none;
  CHECK_NOTHROW(ready::report_line(none, "ok"));
}

TEST_CASE("ready::report_failure reports the error with its hint and returns 1") {
  {
    Pipe p = Pipe::make();
    CHECK(ready::report_failure(p.write, Error("no KVM", 0, "load kvm_intel")) == 1);
    CHECK(drain(p) == "error: no KVM (load kvm_intel)\n");
  }
  {
    Pipe p = Pipe::make();
    CHECK(ready::report_failure(p.write, Error("no KVM")) == 1);
    CHECK(drain(p) == "error: no KVM\n");
  }
  {
    Pipe p = Pipe::make();
    CHECK(ready::report_failure(p.write, std::runtime_error("bad_alloc or so")) == 1);
    CHECK(drain(p) == "error: bad_alloc or so\n");
  }
  Fd none;
  CHECK(ready::report_failure(none, Error("nobody listens")) == 1);
}
