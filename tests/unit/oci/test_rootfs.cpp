// Unit tests for oci/rootfs.h's tree digest: the same files give the same digest whatever their
// times and wherever they are; a change of content, mode, name or link target changes it.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <string>

#include "oci/rootfs.h"
#include "support/temp_dir.h"
#include "util/fs.h"

using namespace space;

namespace {

void make_tree(const std::string& d) {
  fs::mkdir_p(d + "/bin");
  fs::mkdir_p(d + "/etc");
  fs::write_file_atomic(d + "/bin/tool", "#!/bin/sh\necho hi\n", 0755);
  fs::write_file_atomic(d + "/etc/conf", "a=1\n", 0644);
  REQUIRE(::symlink("tool", (d + "/bin/alias").c_str()) == 0);
  REQUIRE(::chmod(d.c_str(), 0755) == 0);
}

}  // namespace

TEST_CASE("oci rootfs: the digest is of content, not of times or place") {
  test::TempDir a("oci-tree-a"), b("oci-tree-b");
  make_tree(a.path);
  make_tree(b.path);
  struct utimbuf old {
    1000000, 1000000
  };
  REQUIRE(::utime((b.path + "/etc/conf").c_str(), &old) == 0);
  const std::string d = oci::tree_digest(a.path);
  CHECK(d.size() == 64);
  CHECK(oci::tree_digest(b.path) == d);

  fs::write_file_atomic(b.path + "/etc/conf", "a=2\n", 0644);
  CHECK(oci::tree_digest(b.path) != d);
  fs::write_file_atomic(b.path + "/etc/conf", "a=1\n", 0644);
  CHECK(oci::tree_digest(b.path) == d);

  REQUIRE(::chmod((b.path + "/etc/conf").c_str(), 0600) == 0);
  CHECK(oci::tree_digest(b.path) != d);
  REQUIRE(::chmod((b.path + "/etc/conf").c_str(), 0644) == 0);

  REQUIRE(::unlink((b.path + "/bin/alias").c_str()) == 0);
  REQUIRE(::symlink("other", (b.path + "/bin/alias").c_str()) == 0);
  CHECK(oci::tree_digest(b.path) != d);
  REQUIRE(::unlink((b.path + "/bin/alias").c_str()) == 0);
  REQUIRE(::symlink("tool", (b.path + "/bin/alias").c_str()) == 0);
  CHECK(oci::tree_digest(b.path) == d);

  REQUIRE(::rename((b.path + "/etc/conf").c_str(), (b.path + "/etc/conf2").c_str()) == 0);
  CHECK(oci::tree_digest(b.path) != d);
  CHECK_THROWS(oci::tree_digest(b.path + "/nosuch"));
}
