// Unit tests for jail/mount_base: shared_mount_base() makes one base mount namespace under a
// directory (kept by a bind mount in a private mount of that directory, mode 0700), whose only
// mount is an empty, read-only root; and over a plain file a reboot left, without binding the
// directory twice. (How the namespace is kept, locked and checked is jail/ns_file's, tested
// there.) Root only (they mount); every mount is undone when a test ends.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "jail/mount_base.h"
#include "jail/ns_file.h"
#include "support/checks.h"
#include "support/forked.h"
#include "support/mount_base_dir.h"
#include "support/skip.h"
#include "util/fd.h"
#include "util/fs.h"

using namespace space;

namespace {

// What a child that joins `base` finds at its root: the names there, then "ro" if it is
// read-only and " rofs" if creating a file fails with EROFS; or "error".
std::string root_of(int base) {
  return test::output_of_child([base] {
    if (::setns(base, CLONE_NEWNS) != 0) return std::string("error");
    std::string s;
    for (const std::string& n : fs::list_dir("/")) s += n + ",";
    struct statvfs v {};
    if (::statvfs("/", &v) == 0 && (v.f_flag & ST_RDONLY)) s += "ro";
    if (::open("/x", O_WRONLY | O_CREAT | O_CLOEXEC, 0600) < 0 && errno == EROFS) s += " rofs";
    return s;
  });
}

}  // namespace

TEST_CASE("mount base: one empty, read-only namespace, kept in a private mount" *
          test::needs_root()) {
  test::MountBaseDir d("mntbase");
  Fd base = jail::shared_mount_base(d.path);
  CHECK(root_of(base.get()) == "ro rofs");  // nothing in it, read-only
  CHECK(jail::is_namespace(base.get(), CLONE_NEWNS));
  CHECK(test::mounts_at(d.path + "/ns").size() == 1);  // kept by its mount: its maker is gone
  auto dir_mounts = test::mounts_at(d.path);
  REQUIRE(dir_mounts.size() == 1);
  CHECK(dir_mounts[0].find("shared:") == std::string::npos);  // private: nothing propagates
  CHECK(test::mode_of(d.path) == 0700);
}

TEST_CASE(
    "mount base: a plain file left by a reboot gets a namespace; the directory is bound once" *
    test::needs_root()) {
  test::MountBaseDir d("mntbase");
  // What a reboot leaves where /run is not a tmpfs: the directory and the file, nothing mounted;
  // here the directory is a mount already (a bind of itself), which is not made again.
  REQUIRE(::mkdir(d.path.c_str(), 0700) == 0);
  REQUIRE(::mount(d.path.c_str(), d.path.c_str(), nullptr, MS_BIND, nullptr) == 0);
  fs::write_file_atomic(d.path + "/ns", "", 0400, fs::Sync::Volatile);
  Fd fd = jail::shared_mount_base(d.path);
  CHECK(root_of(fd.get()) == "ro rofs");
  CHECK(test::mounts_at(d.path + "/ns").size() == 1);
  CHECK(test::mounts_at(d.path).size() == 1);
  Fd regular(::open(d.dir.path.c_str(), O_RDONLY | O_CLOEXEC));
  CHECK_FALSE(jail::is_namespace(regular.get(), CLONE_NEWNS));
}
