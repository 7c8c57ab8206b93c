// Unit tests for util/dynlib: a library loaded and a function found in it; a missing library and
// a missing symbol are Errors that name them and carry the caller's hint.
#include <doctest/doctest.h>
#include <unistd.h>

#include "util/dynlib.h"
#include "util/error.h"

using namespace space;

TEST_CASE("dynlib: load, find, and say what is missing") {
  void* libc = dynlib::open("libc.so.6", "install libc6");
  REQUIRE(libc != nullptr);
  decltype(&::getpid) f = nullptr;
  dynlib::bind(f, {libc}, "getpid", "libc.so.6", "install libc6");
  CHECK(f() == ::getpid());
  try {
    dynlib::open("libspace-no-such.so.1", "apt-get install nothing");
    FAIL("loaded a library that does not exist");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("cannot load libspace-no-such.so.1") != std::string::npos);
    CHECK(e.hint() == "apt-get install nothing");
  }
  try {
    dynlib::symbol({libc}, "space_no_such_function", "libc.so.6", "hint");
    FAIL("found a symbol that does not exist");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "libc.so.6 lacks space_no_such_function");
    CHECK(e.hint() == "hint");
  }
}
