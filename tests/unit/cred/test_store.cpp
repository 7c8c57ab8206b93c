// Unit tests for cred/store, the secret store: set, get, list, remove; mode 0600; the size and
// name limits; a reload from the file, and a corrupt file refused.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <string>

#include "cred/store.h"
#include "support/checks.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;
using space::test::mode_of;
using namespace space::cred;

TEST_CASE("secret store: set, get, list, remove; mode 0600; limits; reload") {
  test::TempDir d("cred");
  std::string path = d.path + "/secrets.json";
  {
    SecretStore s(path);
    CHECK_FALSE(s.set("A", std::string("v\0\xff", 3), "t1"));
    CHECK(s.set("A", "value-2", "t2"));
    CHECK_FALSE(s.set("B", "", "t3"));
    CHECK_THROWS_AS(s.set("bad/name", "x", "t"), Error);
    CHECK_THROWS_AS(s.set("BIG", std::string(64 * 1024 + 1, 'x'), "t"), Error);
    CHECK_NOTHROW(s.set("MAX", std::string(64 * 1024, 'x'), "t"));
  }
  CHECK(mode_of(path) == 0600);
  SecretStore s(path);
  CHECK(s.get("A")->bytes == "value-2");
  CHECK(s.get("B")->bytes.empty());
  CHECK_FALSE(s.get("C"));
  auto l = s.list();
  REQUIRE(l.size() == 3);
  CHECK(l[0].name == "A");
  CHECK(l[0].size == 7);
  CHECK(l[0].created == "t1");
  CHECK(l[0].updated == "t2");
  CHECK(s.remove("A"));
  CHECK_FALSE(s.remove("A"));
  CHECK_FALSE(SecretStore(path).contains("A"));
  fs::write_file_atomic(
      path, R"({"secrets":[{"name":"A","value_base64":"!!","size":0,"created":"","updated":""}]})",
      0600);
  CHECK_THROWS_AS(SecretStore{path}, Error);
}
