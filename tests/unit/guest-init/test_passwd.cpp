// Unit tests for guest-init/passwd.h: the /etc/passwd lookups by uid and by name (name, gid,
// home; malformed lines skipped), /etc/group by name, USER[:GROUP] resolution and the id parser.
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

TEST_CASE("find_passwd_name and find_group_gid look names up exactly") {
  std::string pw = "root:x:0:0:root:/root:/bin/sh\napp:x:1001:1002::/srv/app:/bin/false\n";
  std::string gr = "root:x:0:\nstaff:x:50:app,bob\nbroken\nodd:x:notanumber:\n";
  CHECK(find_passwd_name(pw, "app")->uid == 1001);
  CHECK(find_passwd_name(pw, "app")->home == "/srv/app");
  CHECK_FALSE(find_passwd_name(pw, "ap"));
  CHECK_FALSE(find_passwd_name(pw, "1001"));
  CHECK(find_group_gid(gr, "staff") == 50u);
  CHECK_FALSE(find_group_gid(gr, "odd"));
  CHECK_FALSE(find_group_gid(gr, "broken"));
  CHECK_FALSE(find_group_gid(gr, "nobody"));
}

TEST_CASE("resolve_user: names and numbers on either side of the colon") {
  std::string pw = "root:x:0:0:root:/root:/bin/sh\napp:x:1001:1002::/srv/app:/bin/false\n";
  std::string gr = "staff:x:50:app\n";
  auto a = resolve_user("app", pw, gr);
  CHECK(a.error.empty());
  CHECK(a.uid == 1001);
  CHECK(a.gid == 1002);  // the primary group from passwd
  CHECK(a.pw->home == "/srv/app");
  auto b = resolve_user("app:staff", pw, gr);
  CHECK(b.gid == 50);
  auto c = resolve_user("4242:7", pw, gr);  // numbers need no entry
  CHECK(c.error.empty());
  CHECK(c.uid == 4242);
  CHECK(c.gid == 7);
  CHECK_FALSE(c.pw);
  auto d = resolve_user("4242", pw, gr);
  CHECK(d.gid == 4242);
  CHECK(resolve_user("0:staff", pw, gr).gid == 50);
  CHECK(resolve_user("ghost", pw, gr).error == "user ghost is not in /etc/passwd");
  CHECK(resolve_user("app:ghosts", pw, gr).error == "group ghosts is not in /etc/group");
}
