// Unit tests for guest-init/passwd.h: the /etc/passwd lookup by uid (name, gid, home; malformed
// lines skipped) and the 32-bit id parser.
#include <doctest/doctest.h>

#include <string>

#include "guest-init/passwd.h"

using namespace space::guest;

TEST_CASE("find_passwd_uid reads name, gid and home, and skips malformed lines") {
  std::string f =
      "root:x:0:0:root:/root:/bin/sh\n"
      "broken line\n"
      "short:x:7:7\n"
      "bad:x:12a:5:b:/b:/bin/sh\n"
      "huge:x:99999999999:1:h:/h:/bin/sh\n"
      "user:x:1000:100:A User:/home/user:/bin/sh\n"
      "dup:x:1000:1:d:/d:/bin/sh";
  auto u = find_passwd_uid(f, 1000);
  REQUIRE(u);
  CHECK(u->name == "user");
  CHECK(u->gid == 100);
  CHECK(u->home == "/home/user");
  CHECK(find_passwd_uid(f, 0)->home == "/root");
  CHECK_FALSE(find_passwd_uid(f, 7));
  CHECK_FALSE(find_passwd_uid(f, 12));
  CHECK_FALSE(find_passwd_uid(f, 5));
  CHECK_FALSE(find_passwd_uid("", 0));
  CHECK(find_passwd_uid("n:x:5:6:g:/h:", 5)->gid == 6);  // empty shell, no newline
  CHECK(parse_id("4294967295") == 4294967295u);
  CHECK_FALSE(parse_id("4294967296"));
  CHECK_FALSE(parse_id(""));
  CHECK_FALSE(parse_id("-1"));
}
