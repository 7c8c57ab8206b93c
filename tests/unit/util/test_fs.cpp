// Unit tests for util/fs: atomic writes, mkdir -p, base directories trusted only when ours, rm -rf
// that neither follows symlinks nor crosses mounts, sparse copies, tree copies, tails, listings.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

#include "support/checks.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"

using namespace space;
using space::test::mode_of;

TEST_CASE("write_file_atomic replaces content and leaves no temp file") {
  test::TempDir d("fs");
  std::string f = d.path + "/state.json";
  fs::write_file_atomic(f, "one", 0600);
  CHECK(fs::read_file(f) == "one");
  CHECK(mode_of(f) == 0600);
  fs::write_file_atomic(f, std::string(100000, 'x'));
  CHECK(fs::read_file(f).size() == 100000);
  CHECK(mode_of(f) == 0644);
  CHECK(fs::list_dir(d.path) == std::vector<std::string>{"state.json"});
  CHECK_THROWS_AS(fs::write_file_atomic(d.path + "/no/such/dir/f", "x"), Error);
  CHECK(fs::list_dir(d.path).size() == 1);
}

TEST_CASE("read_file errors") {
  test::TempDir d("fs");
  CHECK_THROWS_WITH_AS(fs::read_file(d.path + "/missing"), doctest::Contains("No such file"),
                       Error);
  fs::write_file_atomic(d.path + "/big", std::string(2000, 'a'));
  CHECK_THROWS_WITH_AS(fs::read_file(d.path + "/big", 1000), doctest::Contains("larger than"),
                       Error);
}

TEST_CASE("mkdir_p") {
  test::TempDir d("fs");
  fs::mkdir_p(d.path + "/a/b/c/", 0700);
  CHECK(fs::is_dir(d.path + "/a/b/c"));
  CHECK(mode_of(d.path + "/a/b/c") == 0700);
  fs::mkdir_p(d.path + "/a/b");  // existing is fine
  fs::write_file_atomic(d.path + "/file", "");
  CHECK_THROWS_AS(fs::mkdir_p(d.path + "/file/sub"), Error);
}

TEST_CASE("ensure_private_dir makes a directory with its mode, and trusts one only if ours") {
  test::TempDir t("private");
  mode_t old_umask = ::umask(077);  // the mode asked for wins over the umask
  std::string made = t.path + "/a/b/root";
  fs::ensure_private_dir(made, 0755);
  ::umask(old_umask);
  CHECK(mode_of(made) == 0755);
  fs::ensure_private_dir(made, 0755);  // again: fine
  std::string open = t.path + "/open";
  REQUIRE(::mkdir(open.c_str(), 0700) == 0);
  REQUIRE(::chmod(open.c_str(), 0777) == 0);
  try {
    fs::ensure_private_dir(open, 0700);
    FAIL("a world-writable directory was trusted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("may be written by others (mode 0777)") != std::string::npos);
    CHECK(e.hint() == "chmod go-w " + open);
  }
  std::string link = t.path + "/link";
  REQUIRE(::symlink(made.c_str(), link.c_str()) == 0);
  fs::ensure_private_dir(link, 0700);  // a link we own, to a directory we own
  if (::geteuid() != 0) return;        // the rest needs root to give things away
  std::string theirs = t.path + "/theirs";
  REQUIRE(::mkdir(theirs.c_str(), 0700) == 0);
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  try {
    fs::ensure_private_dir(theirs, 0700);
    FAIL("a directory of uid 65534 was trusted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("belongs to uid 65534") != std::string::npos);
  }
  REQUIRE(::lchown(link.c_str(), 65534, 65534) == 0);
  CHECK_THROWS_AS(fs::ensure_private_dir(link, 0700), Error);
}

TEST_CASE("remove_tree removes everything but does not follow symlinks") {
  test::TempDir d("fs"), outside("fs");
  fs::write_file_atomic(outside.path + "/precious", "keep");
  fs::mkdir_p(d.path + "/t/a/b");
  fs::write_file_atomic(d.path + "/t/a/b/f", "x");
  fs::write_file_atomic(d.path + "/t/g", "y");
  REQUIRE(::symlink(outside.path.c_str(), (d.path + "/t/a/link").c_str()) == 0);
  REQUIRE(::symlink("/nonexistent", (d.path + "/t/dangling").c_str()) == 0);
  fs::remove_tree(d.path + "/t");
  CHECK_FALSE(fs::exists(d.path + "/t"));
  CHECK(fs::read_file(outside.path + "/precious") == "keep");
  fs::remove_tree(d.path + "/t");  // missing is fine
  // A symlink given as the path itself is removed, not its target.
  REQUIRE(::symlink(outside.path.c_str(), (d.path + "/l").c_str()) == 0);
  fs::remove_tree(d.path + "/l");
  CHECK_FALSE(fs::exists(d.path + "/l"));
  CHECK(fs::exists(outside.path + "/precious"));
}

TEST_CASE("remove_tree refuses to cross a mount point" * test::needs_root()) {
  test::TempDir d("fs");
  std::string mnt = d.path + "/t/mnt";
  fs::mkdir_p(mnt);
  REQUIRE(::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") == 0);
  fs::write_file_atomic(mnt + "/inside", "data");
  CHECK_THROWS_WITH_AS(fs::remove_tree(d.path + "/t"), doctest::Contains("another mount"), Error);
  CHECK(fs::read_file(mnt + "/inside") == "data");
  ::umount2(mnt.c_str(), MNT_DETACH);
}

TEST_CASE("copy_file keeps holes and content") {
  test::TempDir d("fs");
  std::string src = d.path + "/src.img", dst = d.path + "/dst.img";
  {
    Fd fd(::open(src.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    REQUIRE(fd);
    REQUIRE(::ftruncate(fd.get(), 64 << 20) == 0);  // 64 MiB, mostly hole
    REQUIRE(::pwrite(fd.get(), "head", 4, 0) == 4);
    REQUIRE(::pwrite(fd.get(), "middle", 6, 32 << 20) == 6);
  }
  int chunks = 0;
  fs::copy_file(src, dst, 0600, [&] { chunks++; });
  struct stat st {};
  REQUIRE(::stat(dst.c_str(), &st) == 0);
  CHECK(st.st_size == 64 << 20);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(st.st_blocks * 512 < (8 << 20));  // holes stayed holes (or it was a reflink)
  std::string data = fs::read_file(dst, 128 << 20);
  CHECK(data.compare(0, 4, "head") == 0);
  CHECK(data.compare(32 << 20, 6, "middle") == 0);
  CHECK(std::count(data.begin(), data.end(), '\0') == (64 << 20) - 10);
  // The destination must be new, and an aborted copy leaves nothing behind.
  CHECK_THROWS_AS(fs::copy_file(src, dst), Error);
  std::string dst2 = d.path + "/dst2.img";
  CHECK_THROWS_WITH_AS(fs::copy_file(src, dst2, 0600, [] { throw Error("stop"); }), "stop", Error);
  CHECK_FALSE(fs::exists(dst2));
}

TEST_CASE("copy_tree copies files, modes, directories and symlinks, and skips what it is told") {
  test::TempDir d("fs");
  std::string src = d.path + "/src", dst = d.path + "/dst";
  fs::mkdir_p(src + "/sub/deeper");
  fs::mkdir_p(src + "/checkpoint");
  fs::mkdir_p(dst);
  fs::write_file_atomic(src + "/disk", "disk bytes");
  REQUIRE(::chmod((src + "/disk").c_str(), 0640) == 0);
  fs::write_file_atomic(src + "/sub/deeper/f", "deep");
  fs::write_file_atomic(src + "/sub/skipped", "no");
  fs::write_file_atomic(src + "/checkpoint/memory", "no");
  fs::write_file_atomic(src + "/vmm.log", "no");
  REQUIRE(::symlink("disk", (src + "/link").c_str()) == 0);
  REQUIRE(::mkfifo((src + "/fifo").c_str(), 0600) == 0);
  std::vector<std::string> asked;
  fs::copy_tree(src, dst, [&](const std::string& rel) {
    asked.push_back(rel);
    return rel == "checkpoint" || rel == "vmm.log" || rel == "sub/skipped";
  });
  CHECK(fs::read_file(dst + "/disk", 100) == "disk bytes");
  CHECK(mode_of(dst + "/disk") == 0640);
  CHECK(fs::read_file(dst + "/sub/deeper/f", 100) == "deep");
  CHECK_FALSE(fs::exists(dst + "/sub/skipped"));
  CHECK_FALSE(fs::exists(dst + "/checkpoint"));
  CHECK_FALSE(fs::exists(dst + "/vmm.log"));
  CHECK_FALSE(fs::exists(dst + "/fifo"));
  char target[16] = {};
  CHECK(::readlink((dst + "/link").c_str(), target, sizeof target - 1) == 4);
  CHECK(std::string(target) == "disk");
  // Nothing under a skipped directory is even looked at; nested names are relative paths.
  CHECK(std::find(asked.begin(), asked.end(), "checkpoint/memory") == asked.end());
  CHECK(std::find(asked.begin(), asked.end(), "sub/deeper/f") != asked.end());
  // A copy onto existing files fails rather than overwrite them.
  CHECK_THROWS_AS(fs::copy_tree(src, dst), Error);
  CHECK_THROWS_AS(fs::copy_tree(d.path + "/missing", dst), Error);
}

TEST_CASE("tail_lines") {
  test::TempDir d("fs");
  std::string f = d.path + "/log";
  fs::write_file_atomic(f, "1\n2\n3\n4\n");
  CHECK(fs::tail_lines(f, 2) == "3\n4");
  CHECK(fs::tail_lines(f, 10) == "1\n2\n3\n4");
  fs::write_file_atomic(f, "a\nb");
  CHECK(fs::tail_lines(f, 1) == "b");
  CHECK(fs::tail_lines(d.path + "/missing", 5) == "");
}

TEST_CASE("list_dir and absolute") {
  test::TempDir d("fs");
  CHECK(fs::list_dir(d.path + "/missing").empty());
  fs::mkdir_p(d.path + "/x");
  fs::write_file_atomic(d.path + "/y", "");
  auto names = fs::list_dir(d.path);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"x", "y"});
  CHECK(fs::absolute("/a/b") == "/a/b");
  CHECK(fs::absolute("rel").front() == '/');
}

// A name that is a regular file when listed and a link to a host file when opened: the copy must
// hold the link or the file's own data, never what the link points to. A thread swaps the two
// (renameat2 RENAME_EXCHANGE, atomic) while the tree is copied again and again.
TEST_CASE("copy_tree never follows a link swapped in during the copy") {
  test::TempDir t("copy-swap");
  fs::write_file_atomic(t.path + "/secret", "host secret");
  fs::mkdir_p(t.path + "/src");
  fs::write_file_atomic(t.path + "/src/f", "ok");
  REQUIRE(::symlink((t.path + "/secret").c_str(), (t.path + "/link").c_str()) == 0);
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    while (!stop)
      ::renameat2(AT_FDCWD, (t.path + "/src/f").c_str(), AT_FDCWD, (t.path + "/link").c_str(),
                  RENAME_EXCHANGE);
  });
  int leaked = 0, copied = 0;
  for (int i = 0; i < 3000 && leaked == 0; i++) {
    const std::string dst = t.path + "/dst" + std::to_string(i);
    fs::mkdir_p(dst);
    try {
      fs::copy_tree(t.path + "/src", dst);
      copied++;
      struct stat st {};
      if (::lstat((dst + "/f").c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          fs::read_file(dst + "/f") == "host secret")
        leaked++;
    } catch (const Error&) {
      // "changed into another kind of file" or a vanished name: refused, not leaked
    }
    fs::remove_tree(dst);
  }
  stop = true;
  swapper.join();
  CHECK(leaked == 0);
  CHECK(copied > 0);
}
