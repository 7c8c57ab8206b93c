// Unit tests for util/open_resolved: the component walk that stands in for openat2 where the
// kernel has none (gVisor's) must give what the kernel's openat2 gives. Each case runs both on
// the same tree (symlinks absolute and relative, "..", a link out of the tree, a loop, a file
// where a directory is wanted) and compares: the same inode, or the same errno.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "support/temp_dir.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/open_resolved.h"

using namespace space;

namespace {

// What an open gave: the inode, or -errno.
long long outcome(int fd) {
  if (fd < 0) return -errno;
  struct stat st {};
  ::fstat(fd, &st);
  ::close(fd);
  return static_cast<long long>(st.st_ino);
}

long long kernel(int root, const std::string& path, int flags, uint64_t resolve) {
  return outcome(open_resolved(root, path, flags, resolve));
}

long long walk(int root, const std::string& path, int flags, uint64_t resolve) {
  return outcome(open_resolved_walk(root, path, flags, resolve));
}

void make_tree(const std::string& top) {
  // top/outside (a file outside the root), top/root/{etc/hosts, a/b/c, links...}
  const std::string r = top + "/root";
  fs::mkdir_p(r + "/etc");
  fs::mkdir_p(r + "/a/b");
  fs::write_file_atomic(top + "/outside", "outside\n", 0644);
  fs::write_file_atomic(r + "/etc/hosts", "hosts\n", 0644);
  fs::write_file_atomic(r + "/a/b/c", "c\n", 0644);
  REQUIRE(::symlink("/etc/hosts", (r + "/abs-link").c_str()) == 0);  // absolute
  REQUIRE(::symlink("a/b", (r + "/rel-dir").c_str()) == 0);          // relative, a directory
  REQUIRE(::symlink("../../outside", (r + "/a/up").c_str()) == 0);   // climbs out
  REQUIRE(::symlink("loop2", (r + "/loop1").c_str()) == 0);
  REQUIRE(::symlink("loop1", (r + "/loop2").c_str()) == 0);
  REQUIRE(::symlink("/a/b/c", (r + "/a/b/abs-c").c_str()) == 0);
}

}  // namespace

TEST_CASE("open_resolved: the walk resolves as openat2 does") {
  test::TempDir t("resolve");
  make_tree(t.path);
  Fd root(::open((t.path + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(root);
  // Every path under every rule the callers use.
  const char* paths[] = {"etc/hosts",
                         "/etc/hosts",
                         "abs-link",
                         "rel-dir/c",
                         "rel-dir/../etc/hosts",
                         "a/up",
                         "../outside",
                         "../../etc/hosts",
                         "loop1",
                         "etc/hosts/x",
                         "missing",
                         "a/b/abs-c",
                         "/",
                         ".",
                         "a/..",
                         "etc//hosts/",
                         "rel-dir/",  // a trailing slash follows a last link, O_NOFOLLOW or not
                         "abs-link/"};
  const uint64_t rules[] = {
      RESOLVE_IN_ROOT,
      RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
      RESOLVE_BENEATH,
      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
  };
  for (uint64_t rule : rules) {
    for (const std::string path : paths) {
      for (int flags : {O_RDONLY, O_PATH, O_PATH | O_NOFOLLOW}) {
        CAPTURE(rule);
        CAPTURE(path);
        CAPTURE(flags);
        long long k = kernel(root.get(), path, flags, rule);
        long long w = walk(root.get(), path, flags, rule);
        CHECK(w == k);
      }
    }
  }
}

TEST_CASE("open_resolved: the walk never leaves the root, and creates where asked") {
  test::TempDir t("resolve");
  make_tree(t.path);
  Fd root(::open((t.path + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(root);
  struct stat outside {};
  REQUIRE(::stat((t.path + "/outside").c_str(), &outside) == 0);
  // IN_ROOT: the link that climbs out lands on root/outside (missing), never on top/outside.
  CHECK(walk(root.get(), "a/up", O_RDONLY, RESOLVE_IN_ROOT) == -ENOENT);
  CHECK(walk(root.get(), "../outside", O_RDONLY, RESOLVE_IN_ROOT) == -ENOENT);
  // BENEATH: refused outright.
  CHECK(walk(root.get(), "a/up", O_RDONLY, RESOLVE_BENEATH) == -EXDEV);
  CHECK(walk(root.get(), "/etc/hosts", O_RDONLY, RESOLVE_BENEATH) == -EXDEV);
  CHECK(walk(root.get(), "abs-link", O_RDONLY, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) == -ELOOP);
  CHECK(walk(root.get(), "loop1", O_RDONLY, RESOLVE_IN_ROOT) == -ELOOP);
  // O_CREAT through the walk makes the file beneath the root, with the mode asked for.
  int fd = open_resolved_walk(root.get(), "a/b/new", O_WRONLY | O_CREAT | O_EXCL,
                              RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, 0640);
  REQUIRE(fd >= 0);
  Fd made(fd);
  struct stat st {};
  REQUIRE(::stat((t.path + "/root/a/b/new").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  CHECK(outcome(open_resolved_walk(root.get(), "a/b/new", O_WRONLY | O_CREAT | O_EXCL,
                                   RESOLVE_BENEATH, 0640)) == -EEXIST);
}
