// Unit tests for util/tree.h, tree_writer.h, tree_walker.h and copy_target.h: a tree walked by
// descriptor and written back elsewhere keeps its kinds, modes, owners, times, links and empty
// directories; a hostile stream (`..`, absolute names, a symlink planted then written through,
// data beyond a size, the size limit) writes nothing outside its root and removes what it made;
// without privileges, setuid/setgid bits and security.* / trusted.* xattrs are dropped and
// counted; and docker cp's destination rules.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "support/privileged_xattrs.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "support/tree_files.h"
#include "util/copy_target.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/tree.h"
#include "util/tree_walker.h"
#include "util/tree_writer.h"

using namespace space;
using space::test::exists;
using space::test::put_file;
using space::test::slurp;
using space::test::TempDir;

namespace {

// Walks `src` (top) and writes it beneath `dst_dir` with `o`.
TreeStats copy_tree(const std::string& src, const std::string& dst_dir, TreeWriteOptions o) {
  Fd top(::open(src.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  REQUIRE(top.valid());
  Fd dst(::open(dst_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(dst.valid());
  TreeWriter w(dst.get(), o, "test");
  walk_tree(top.get(), {}, [&](const TreeEntry& e, int fd) {
    w.begin(e);
    if (fd < 0) return;
    uint64_t at = 0;
    send_file_data(fd, e.size, 7, [&](const uint8_t* p, size_t n) {
      w.data({p, n}, at);
      at += n;
    });
    w.end_file();
  });
  w.finish();
  return w.stats();
}

TreeEntry file_entry(const std::string& name, uint64_t size) {
  TreeEntry e;
  e.kind = EntryKind::File;
  e.name = name;
  e.mode = 0644;
  e.size = size;
  return e;
}

}  // namespace

TEST_CASE("tree: entry names are split; absolute, '..' and NUL names refused") {
  CHECK(entry_components("./a//b/") == std::vector<std::string>{"a", "b"});
  CHECK(entry_components(".").empty());
  CHECK(entry_components("").empty());
  CHECK(entry_components("a/./b") == std::vector<std::string>{"a", "b"});
  CHECK(entry_components("..a/b..") == std::vector<std::string>{"..a", "b.."});
  CHECK_THROWS_AS(entry_components(".."), Error);
  CHECK_THROWS_AS(entry_components(std::string(300, 'x')), Error);
  CHECK_THROWS_WITH_AS(entry_components("/etc/passwd"), doctest::Contains("absolute"), Error);
  CHECK_THROWS_WITH_AS(entry_components("a/../../x"), doctest::Contains(".."), Error);
  CHECK_THROWS_AS(entry_components(std::string("a\0b", 3)), Error);
  CHECK(join_components({"a", "b", "c"}, 2) == "a/b");
}

TEST_CASE("tree: a walked tree written elsewhere keeps kinds, modes, times, links, empty dirs") {
  TempDir t("tree");
  const std::string src = t.path + "/src";
  fs::mkdir_p(src + "/sub/empty");
  put_file(src + "/a.txt", "hello");
  put_file(src + "/sub/s u id \xc3\xa9", "setuid", 04755);
  REQUIRE(::chmod((src + "/sub/s u id \xc3\xa9").c_str(), 04755) == 0);
  REQUIRE(::link((src + "/a.txt").c_str(), (src + "/sub/hard").c_str()) == 0);
  REQUIRE(::symlink("/etc/passwd", (src + "/abs-link").c_str()) == 0);
  REQUIRE(::symlink("../a.txt", (src + "/sub/rel-link").c_str()) == 0);
  REQUIRE(::mkfifo((src + "/fifo").c_str(), 0600) == 0);
  timespec ts[2] = {{1000000000, 5}, {1000000000, 5}};
  REQUIRE(::utimensat(AT_FDCWD, (src + "/a.txt").c_str(), ts, 0) == 0);
  REQUIRE(::utimensat(AT_FDCWD, (src + "/sub/empty").c_str(), ts, 0) == 0);

  fs::mkdir_p(t.path + "/dst");
  TreeWriteOptions o;
  o.top = "copy";
  o.devices = false;
  o.skip_devices = true;
  TreeStats s = copy_tree(src, t.path + "/dst", o);
  const std::string d = t.path + "/dst/copy";
  CHECK(slurp(d + "/a.txt") == "hello");
  CHECK(slurp(d + "/sub/s u id \xc3\xa9") == "setuid");
  struct stat a, h, su, e;
  REQUIRE(::stat((d + "/a.txt").c_str(), &a) == 0);
  REQUIRE(::stat((d + "/sub/hard").c_str(), &h) == 0);
  CHECK(a.st_ino == h.st_ino);  // hard links stay links
  CHECK(a.st_mtim.tv_sec == 1000000000);
  REQUIRE(::stat((d + "/sub/s u id \xc3\xa9").c_str(), &su) == 0);
  CHECK((su.st_mode & 07777) == 04755);
  REQUIRE(::stat((d + "/sub/empty").c_str(), &e) == 0);
  CHECK(S_ISDIR(e.st_mode));
  CHECK(e.st_mtim.tv_sec == 1000000000);  // directory times are set last
  char buf[64] = {};
  CHECK(::readlink((d + "/abs-link").c_str(), buf, sizeof buf) == 11);
  CHECK(std::string(buf) == "/etc/passwd");  // copied as a link, never followed
  CHECK_FALSE(exists(d + "/fifo"));
  CHECK(s.skipped == 1);
  CHECK(s.bytes == 5 + 6);

  SUBCASE("without keep_setid the setuid bit is cleared") {
    TempDir t2("tree2");
    TreeWriteOptions o2;
    o2.keep_setid = false;
    o2.devices = false;
    o2.skip_devices = true;
    copy_tree(src, t2.path, o2);  // top "": the entries land in the root itself
    struct stat st;
    REQUIRE(::stat((t2.path + "/sub/s u id \xc3\xa9").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0755);
    CHECK(slurp(t2.path + "/a.txt") == "hello");
  }
  SUBCASE("devices refused unless skipped") {
    TempDir t3("tree3");
    TreeWriteOptions o3;
    o3.devices = false;
    CHECK_THROWS_WITH_AS(copy_tree(src, t3.path, o3), doctest::Contains("device node or fifo"),
                         Error);
  }
}

// Needs root: the entries carry owners, which only root can give.
TEST_CASE("tree: hostile streams write nothing outside the root and leave nothing behind" *
          test::needs_root()) {
  TempDir t("hostile");
  fs::mkdir_p(t.path + "/root");
  put_file(t.path + "/canary", "untouched");
  Fd root(::open((t.path + "/root").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  TreeWriteOptions o;
  o.top = "top";

  auto refused = [&](std::vector<TreeEntry> entries, const char* why) {
    TreeWriter w(root.get(), o, "stream");
    TreeEntry top;
    top.kind = EntryKind::Dir;
    top.mode = 0755;
    w.begin(top);
    try {
      for (const auto& e : entries) {
        w.begin(e);
        if (w.in_file()) {
          w.data(std::vector<uint8_t>(e.size, 'x'), 0);
          w.end_file();
        }
      }
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(why) != std::string::npos, e.what());
      w.remove_created();
    }
    CHECK(slurp(t.path + "/canary") == "untouched");
    CHECK_FALSE(exists(t.path + "/root/top"));  // what the stream made is gone
    CHECK_FALSE(exists(t.path + "/escape"));
  };
  refused({file_entry("../canary", 3)}, "..");
  refused({file_entry("../../escape", 3)}, "..");
  refused({file_entry("/etc/escape", 3)}, "absolute");
  TreeEntry link;
  link.kind = EntryKind::Symlink;
  link.name = "l";
  link.target = t.path;
  refused({link, file_entry("l/canary", 3)}, "symbolic link");
  TreeEntry hard;
  hard.kind = EntryKind::Hardlink;
  hard.name = "h";
  hard.target = "../../canary";
  refused({hard}, "..");
  {
    TreeWriter w(root.get(), o, "stream");
    TreeEntry top;
    top.kind = EntryKind::Dir;
    w.begin(top);
    w.begin(file_entry("f", 2));
    CHECK_THROWS_WITH_AS(w.data(std::vector<uint8_t>(3, 'x'), 0), doctest::Contains("more data"),
                         Error);
    w.remove_created();
    CHECK_FALSE(exists(t.path + "/root/top"));
  }
}

TEST_CASE("tree: without privileges, setid bits and security/trusted xattrs are dropped, counted" *
          test::needs_privileged_xattrs()) {
  space::test::PrivilegedXattrDir t("privileges");
  REQUIRE(t.usable());
  using space::test::xattr_of;
  const std::string cap = space::test::cap_v2();
  auto stream = [&](TreeWriter& w) {
    TreeEntry top;
    top.kind = EntryKind::Dir;
    top.mode = 0755;
    w.begin(top);
    TreeEntry d = top;
    d.name = "shared";
    d.mode = 02775;  // setgid directory
    d.xattrs = {{"trusted.dir", "d"}};
    w.begin(d);
    TreeEntry f = file_entry("shared/ping", 3);
    f.mode = 04755;
    f.xattrs = {{"security.capability", cap}, {"trusted.x", "t"}, {"user.keep", "u"}};
    w.begin(f);
    w.data(std::vector<uint8_t>{'E', 'L', 'F'}, 0);
    w.end_file();
    TreeEntry plain = file_entry("plain", 0);
    plain.xattrs = {{"user.keep", "u"}};
    w.begin(plain);
    w.end_file();
    w.finish();
  };
  Fd root(::open(t.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(root.valid());

  SUBCASE("dropped") {
    TreeWriteOptions o;
    o.top = "out";
    o.keep_setid = false;
    o.privileged_xattrs = false;
    TreeWriter w(root.get(), o, "test");
    stream(w);
    const std::string ping = t.path + "/out/shared/ping";
    struct stat st;
    REQUIRE(::stat(ping.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0755);
    REQUIRE(::stat((t.path + "/out/shared").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0775);
    CHECK(xattr_of(ping, "security.capability") == "<none>");
    CHECK(xattr_of(ping, "trusted.x") == "<none>");
    CHECK(xattr_of(t.path + "/out/shared", "trusted.dir") == "<none>");
    CHECK(xattr_of(ping, "user.keep") == "u");  // what grants nothing stays
    CHECK(xattr_of(t.path + "/out/plain", "user.keep") == "u");
    CHECK(w.stats().setid_dropped == 2);   // ping and shared
    CHECK(w.stats().xattrs_dropped == 3);  // capability, trusted.x, trusted.dir
  }
  SUBCASE("kept by default") {
    TreeWriteOptions o;
    o.top = "out";
    TreeWriter w(root.get(), o, "test");
    stream(w);
    const std::string ping = t.path + "/out/shared/ping";
    struct stat st;
    REQUIRE(::stat(ping.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 04755);
    CHECK(xattr_of(ping, "security.capability") == cap);
    CHECK(xattr_of(ping, "trusted.x") == "t");
    CHECK(w.stats().setid_dropped == 0);
    CHECK(w.stats().xattrs_dropped == 0);
  }
}

TEST_CASE("tree: the size limit stops a stream and what it made is removed" * test::needs_root()) {
  TempDir t("limit");
  put_file(t.path + "/keep", "old");
  Fd root(::open(t.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  TreeWriteOptions o;
  o.max_bytes = 10;
  o.max_bytes_hint = "raise --max-size";
  TreeWriter w(root.get(), o, "out");
  TreeEntry dir;
  dir.kind = EntryKind::Dir;
  dir.name = "d";
  w.begin(dir);
  w.begin(file_entry("d/one", 8));
  w.data(std::vector<uint8_t>(8, 'a'), 0);
  w.end_file();
  w.begin(file_entry("keep", 8));  // replaces an existing file only once complete
  try {
    w.data(std::vector<uint8_t>(8, 'b'), 0);
    FAIL("no size limit");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("size limit") != std::string::npos);
    CHECK(e.hint() == "raise --max-size");  // the caller's hint, attached where it is refused
  }
  w.remove_created();
  CHECK_FALSE(exists(t.path + "/d"));
  CHECK(slurp(t.path + "/keep") == "old");
  // No temporary file is left either.
  std::vector<std::string> names;
  for (const auto& n : fs::list_dir(t.path)) names.push_back(n);
  CHECK(names == std::vector<std::string>{"keep"});
}

TEST_CASE("copy_target: docker cp's destination rules") {
  TempDir t("target");
  fs::mkdir_p(t.path + "/dir");
  put_file(t.path + "/file", "x");
  auto target = [&](const std::string& dest, CopySource s) {
    CopyTarget c = copy_target(AT_FDCWD, 0, t.path + "/" + dest, s);
    REQUIRE(c.dir.valid());
    return c.top;
  };
  CopySource file{false, false, false, "a.txt"};
  CopySource dir{true, false, false, "src"};
  CopySource contents{true, true, false, "src"};
  CopySource stream{true, false, true, ""};
  CHECK(target("dir", file) == "a.txt");  // into an existing directory
  CHECK(target("dir/", file) == "a.txt");
  CHECK(target("file", file) == "file");        // replaces a file
  CHECK(target("new.txt", file) == "new.txt");  // a new name
  CHECK(target("dir", dir) == "src");
  CHECK(target("newdir", dir) == "newdir");  // created with SRC's contents
  CHECK(target("dir", contents) == "");      // SRC/. : the contents go in
  CHECK(target("newdir", contents) == "newdir");
  CHECK(target("dir", stream) == "");
  CHECK_THROWS_WITH_AS(target("file", dir), doctest::Contains("cannot copy a directory"), Error);
  CHECK_THROWS_WITH_AS(target("missing/", file), doctest::Contains("does not exist"), Error);
  CHECK_THROWS_WITH_AS(target("missing", stream), doctest::Contains("does not exist"), Error);
  CHECK_THROWS_WITH_AS(target("file", stream), doctest::Contains("not a directory"), Error);
  CHECK_THROWS_WITH_AS(target("file/", file), doctest::Contains("not a directory"), Error);
  CHECK_THROWS_WITH_AS(target("no/such/x", file), doctest::Contains("parent directory"), Error);

  CHECK(source_name("a/b").name == "b");
  CHECK_FALSE(source_name("a/b/").contents);
  CHECK(source_name("a/b/").name == "b");
  CHECK(source_name("a/b/.").contents);
  CHECK(source_name("a/b/.").name == "b");
  CHECK(source_name("/").contents);
  CHECK(source_name("/").name.empty());
}
