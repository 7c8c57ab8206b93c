// Unit tests for util/env: the seconds parser behind SPACE_BOOT_TIMEOUT and
// SPACE_CREDD_IDLE_SECONDS (unset, empty, valid, and every kind of bad value).
#include <doctest/doctest.h>
#include <stdlib.h>

#include <string>

#include "util/env.h"
#include "util/error.h"

using namespace space;

TEST_CASE("env::seconds") {
  const char* name = "SPACE_TEST_SECONDS";
  ::unsetenv(name);
  CHECK(env::seconds(name, 300) == 300);
  ::setenv(name, "", 1);
  CHECK(env::seconds(name, 300) == 300);
  ::setenv(name, "1", 1);
  CHECK(env::seconds(name, 300) == 1);
  ::setenv(name, "86400", 1);
  CHECK(env::seconds(name, 300) == 86400);
  for (const char* bad : {"0", "-1", "86401", "5s", "abc", "99999999999999999999"}) {
    ::setenv(name, bad, 1);
    try {
      env::seconds(name, 300);
      FAIL("accepted " << bad);
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find(std::string(name) + "=" + bad) != std::string::npos);
      CHECK(e.hint() == "set SPACE_TEST_SECONDS to a whole number of seconds, e.g. 300");
    }
  }
  ::unsetenv(name);
}
