// Unit tests for store/paths: sandbox id rules, generated ids, the sandbox path layout and the
// store layout; a pool member's paths and the removal of the links a handed-out one leaves.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "store/paths.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;

TEST_CASE("valid ids") {
  for (const std::string& id :
       std::vector<std::string>{"a", "0", "abc-123", "a.b_c-d", "9lives", std::string(64, 'x')})
    CHECK_NOTHROW(store::validate_id(id));
}

TEST_CASE("invalid ids are rejected with a hint") {
  for (const std::string& id :
       std::vector<std::string>{"", "A", "-a", ".a", "_a", "a/b", "..", "a b", "ab\n", "é",
                                std::string(65, 'x'), std::string("a\0b", 3)}) {
    CAPTURE(id);
    try {
      store::validate_id(id);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).rfind("invalid sandbox id", 0) == 0);
      CHECK_FALSE(e.hint().empty());
    }
  }
}

TEST_CASE("generated ids are valid and distinct") {
  std::set<std::string> seen;
  for (int i = 0; i < 100; i++) {
    std::string id = store::generate_id();
    CHECK(id.size() == 12);
    CHECK_NOTHROW(store::validate_id(id));
    seen.insert(id);
  }
  CHECK(seen.size() == 100);
}

TEST_CASE("path layout") {
  ::setenv("SPACE_RUN_DIR", "/tmp/rd/", 1);
  auto p = store::sandbox_paths("/var/lib/space/", "box");
  CHECK(p.dir == "/var/lib/space/store/sandboxes/box");
  CHECK(p.state == p.dir + "/state.json");
  CHECK(p.config == p.dir + "/config.json");
  CHECK(p.rootfs == p.dir + "/rootfs.ext4");
  CHECK(p.console_log == p.dir + "/console.log");
  CHECK(p.vmm_log == p.dir + "/vmm.log");
  CHECK(p.lock == p.dir + "/lock");
  CHECK(p.run_dir == "/tmp/rd/box");
  CHECK(p.control_sock == "/tmp/rd/box/control.sock");
  CHECK(p.vsock_sock == "/tmp/rd/box/vsock.sock");
  ::unsetenv("SPACE_RUN_DIR");
  CHECK(store::sandbox_paths("/r", "box").run_dir == "/run/space/box");
  CHECK(store::sandbox_paths("rel", "box").dir.front() == '/');  // made absolute
  CHECK_THROWS_AS(store::sandbox_paths("/r", "../x"), Error);
}

TEST_CASE("store paths") {
  auto sp = store::store_paths("/var/lib/space/");
  CHECK(sp.root == "/var/lib/space");
  CHECK(sp.dir == "/var/lib/space/store");
  CHECK(sp.image == "/var/lib/space/store.img");
  CHECK(sp.templates == "/var/lib/space/store/templates");
  CHECK(sp.sandboxes == "/var/lib/space/store/sandboxes");
  CHECK(store::store_paths("/").dir == "/store");
  CHECK(store::sandboxes_dir("/r") == "/r/store/sandboxes");
  auto p = store::paths_in("/r/store/templates/.t.tmp-1", "/run/space/.template-1");
  CHECK(p.config == "/r/store/templates/.t.tmp-1/config.json");
  CHECK(p.vsock_sock == "/run/space/.template-1/vsock.sock");
}

TEST_CASE("a pool member's paths, and the links a handed-out member leaves") {
  test::TempDir d("paths");
  ::setenv("SPACE_RUN_DIR", d.path.c_str(), 1);
  auto m = store::pool_member_paths("/r", "base", "0123abcd");
  CHECK(m.dir == "/r/store/pool/base/0123abcd");
  CHECK(m.state == m.dir + "/state.json");
  CHECK(m.run_dir == d.path + "/.pool-0123abcd");
  CHECK(m.control_sock == m.run_dir + "/control.sock");
  CHECK(store::store_paths("/r").pool == "/r/store/pool");
  CHECK_THROWS_AS(store::pool_member_paths("/r", "../t", "m"), Error);
  CHECK_THROWS_AS(store::pool_member_paths("/r", "t", "m/x"), Error);

  // Links to p1 go; a link to another sandbox, a member's own directory and other names stay.
  fs::mkdir_p(d.path + "/p1");
  REQUIRE(::symlink("p1", (d.path + "/.pool-aaa").c_str()) == 0);
  REQUIRE(::symlink("p1", (d.path + "/.pool-bbb").c_str()) == 0);
  REQUIRE(::symlink("p2", (d.path + "/.pool-ccc").c_str()) == 0);
  fs::mkdir_p(d.path + "/.pool-ddd");
  REQUIRE(::symlink("p1", (d.path + "/other").c_str()) == 0);
  store::remove_run_aliases("p1");
  auto left = fs::list_dir(d.path);
  std::set<std::string> got(left.begin(), left.end());
  CHECK(got == std::set<std::string>{"p1", ".pool-ccc", ".pool-ddd", "other"});
  store::remove_run_aliases("p1");  // nothing left to do
  ::unsetenv("SPACE_RUN_DIR");
}

TEST_CASE("template, image and pool directories: joined in one place, each name validated") {
  CHECK(store::template_dir("/r/", "py3") == "/r/store/templates/py3");
  CHECK(store::image_dir("/r", "debian.12") == "/r/store/images/debian.12");
  CHECK(store::template_pool_dir("/r", "py3") == "/r/store/pool/py3");
  CHECK_THROWS_WITH_AS(store::template_dir("/r", "../x"),
                       doctest::Contains("invalid template name"), Error);
  CHECK_THROWS_WITH_AS(store::image_dir("/r", "a/../../b"), doctest::Contains("invalid image name"),
                       Error);
  CHECK_THROWS_WITH_AS(store::image_dir("/r", ""), doctest::Contains("invalid image name"), Error);
  CHECK_THROWS_WITH_AS(store::template_pool_dir("/r", "."),
                       doctest::Contains("invalid template name"), Error);
  CHECK_THROWS_WITH_AS(store::pool_member_paths("/r", "Py", "m1"),
                       doctest::Contains("invalid template name"), Error);
}

TEST_CASE("a sandbox's run directory and its entries in per-sandbox directories validate the id") {
  ::setenv("SPACE_RUN_DIR", "/tmp/rb/", 1);
  CHECK(store::sandbox_run_dir("s1") == "/tmp/rb/s1");
  CHECK(store::sandbox_paths("/r", "s1").run_dir == store::sandbox_run_dir("s1"));
  CHECK(store::sandbox_entry("/e/policies", "s1", ".json") == "/e/policies/s1.json");
  CHECK(store::sandbox_entry("/e/netns", "s1") == "/e/netns/s1");
  for (const char* bad : {"..", "../s1", "s1/..", "", "S1"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(store::sandbox_run_dir(bad), doctest::Contains("invalid sandbox id"),
                         Error);
    CHECK_THROWS_WITH_AS(store::sandbox_entry("/e", bad, ".log"),
                         doctest::Contains("invalid sandbox id"), Error);
  }
  ::unsetenv("SPACE_RUN_DIR");
}
