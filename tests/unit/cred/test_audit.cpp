// Unit tests for cred/audit: the audit line format (time, sandbox, name, outcome, detail), and
// lines appended to a file of mode 0600 and read back.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <string>

#include "cred/audit.h"
#include "support/checks.h"
#include "support/temp_dir.h"
#include "util/fs.h"

using namespace space;
using space::test::mode_of;
using namespace space::cred;

TEST_CASE("audit lines: time, sandbox, name, outcome, detail; appended with mode 0600") {
  CHECK(rfc3339_ms(1'700'000'000'123) == "2023-11-14T22:13:20.123Z");
  test::TempDir d("cred");
  std::string path = d.path + "/audit.log";
  audit_append(path, {1, "a", "X", "granted", ""});
  audit_append(path, {2, "a", "X", "fetched", ""});
  CHECK(mode_of(path) == 0600);
  auto lines = audit_read(path);
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].at("outcome").as_string() == "fetched");
  // The bytes of a line: fields in this order, null for an operator's event, no empty detail.
  std::string other = d.path + "/other.log";
  audit_append(other, {1'700'000'000'123, "sb", "TOKEN", "denied", "expired"});
  audit_append(other, {0, "", "T", "set", ""});
  audit_append(other, {0, "sb", "T", "fetched", "", 0, "gvisor"});  // the sandbox's engine
  CHECK(
      fs::read_file(other) ==
      R"({"time":"2023-11-14T22:13:20.123Z","sandbox":"sb","name":"TOKEN","outcome":"denied","detail":"expired"})"
      "\n"
      R"({"time":"1970-01-01T00:00:00.000Z","sandbox":null,"name":"T","outcome":"set"})"
      "\n"
      R"({"time":"1970-01-01T00:00:00.000Z","sandbox":"sb","engine":"gvisor","name":"T","outcome":"fetched"})"
      "\n");
}
