// Unit tests for cred/paths: where the credential directory is (beside the root, or
// $SPACE_CRED_DIR), the files in it, and the socket paths' length limits.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <string>

#include "cred/paths.h"
#include "util/error.h"

using namespace space;
using namespace space::cred;

TEST_CASE("the credential directory sits beside the root, or at $SPACE_CRED_DIR") {
  ::unsetenv("SPACE_CRED_DIR");
  CHECK(cred_dir_for_root("/var/lib/space") == "/var/lib/space.cred");
  CHECK(cred_dir_for_root("/var/lib/space/") == "/var/lib/space.cred");
  CHECK_THROWS_AS(cred_dir_for_root("/"), Error);
  ::setenv("SPACE_CRED_DIR", "/srv/cred/", 1);
  CHECK(cred_dir_for_root("/var/lib/space") == "/srv/cred");
  ::unsetenv("SPACE_CRED_DIR");
  auto p = cred_paths_in("/c");
  CHECK(p.secrets == "/c/secrets.json");
  CHECK(p.grants == "/c/grants.json");
  CHECK(p.audit == "/c/audit.log");
  CHECK(p.sock == "/c/credd.sock");
  ::setenv("SPACE_RUN_DIR", "/r", 1);
  CHECK(sandbox_socket("abc") == "/r/abc/cred.sock");
  CHECK_THROWS_AS(sandbox_socket("../x"), Error);
  ::unsetenv("SPACE_RUN_DIR");
  CHECK_NOTHROW(check_socket_paths("/var/lib/space.cred"));
  CHECK_NOTHROW(check_socket_paths("/" + std::string(60, 'd')));
  CHECK_THROWS_AS(check_socket_paths("/" + std::string(100, 'd')), Error);
}
