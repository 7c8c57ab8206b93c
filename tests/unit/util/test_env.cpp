// Unit tests for util/env: the seconds parser behind SPACE_BOOT_TIMEOUT and
// SPACE_CREDD_IDLE_SECONDS (unset, empty, valid, and every kind of bad value), and the daemons'
// environment (a fixed PATH, the SPACE_* settings that are set, nothing else of ours).
#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/scoped_env.h"
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

TEST_CASE("env::daemon_environment passes PATH and the SPACE_* settings, nothing else") {
  test::ScopedEnv run("SPACE_RUN_DIR", "/tmp/space-run-test");
  test::ScopedEnv seccomp("SPACE_SECCOMP", "log");
  test::ScopedEnv cred("SPACE_CRED_DIR", "");  // empty counts as unset
  test::ScopedEnv cache("SPACE_CACHE", nullptr);
  test::ScopedEnv credd("SPACE_CREDD_IDLE_SECONDS", nullptr);
  test::ScopedEnv egress("SPACE_EGRESS_IDLE_SECONDS", nullptr);
  test::ScopedEnv token("CI_TOKEN", "secret-value");
  test::ScopedEnv preload("LD_PRELOAD", "/tmp/evil.so");
  test::ScopedEnv path("PATH", "/tmp/evil-bin:/usr/bin");
  test::ScopedEnv other("SPACE_TEST_UNLISTED", "x");
  std::vector<std::string> env = env::daemon_environment();
  auto has = [&](const std::string& e) {
    return std::find(env.begin(), env.end(), e) != env.end();
  };
  CHECK(has("SPACE_RUN_DIR=/tmp/space-run-test"));
  CHECK(has("SPACE_SECCOMP=log"));
  size_t paths = 0;
  for (const auto& e : env) {
    CAPTURE(e);
    CHECK(e.find("secret-value") == std::string::npos);
    CHECK(e.rfind("CI_TOKEN=", 0) != 0);
    CHECK(e.rfind("LD_PRELOAD=", 0) != 0);
    CHECK(e.rfind("SPACE_CRED_DIR=", 0) != 0);
    CHECK(e.rfind("SPACE_CACHE=", 0) != 0);
    CHECK(e.rfind("SPACE_TEST_UNLISTED=", 0) != 0);
    CHECK(e.find("evil") == std::string::npos);  // PATH is fixed, not ours
    CHECK((e.rfind("PATH=", 0) == 0 || e.rfind("SPACE_", 0) == 0));
    if (e.rfind("PATH=", 0) == 0) {
      paths++;
      CHECK(e.find("/usr/bin") != std::string::npos);
      CHECK(e.find("/sbin") != std::string::npos);
    }
  }
  CHECK(paths == 1);
  CHECK(env.size() == 3);
  test::ScopedEnv unset("SPACE_RUN_DIR", nullptr);
  for (const auto& e : env::daemon_environment()) CHECK(e.rfind("SPACE_RUN_DIR=", 0) != 0);
}
