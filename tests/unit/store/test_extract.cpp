// Unit tests for safe tar extraction: names, every entry kind with its metadata, OCI whiteouts,
// and hostile archives (escapes through `..`, absolute names, planted symlinks and outside hard
// links; devices and setid bits where refused; truncated and non-tar input), each refused with
// nothing written outside the root.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "store/extract.h"
#include "support/skip.h"
#include "support/tar_writer.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"

using namespace space;
using space::test::TarEntry;

namespace {
struct Rig {
  test::TempDir d{"extract"};
  std::string root = d.path + "/root";
  std::string outside = d.path + "/outside";
  Rig() {
    REQUIRE(::mkdir(root.c_str(), 0755) == 0);
    REQUIRE(::mkdir(outside.c_str(), 0755) == 0);
  }
  store::ExtractStats run(const std::vector<TarEntry>& entries, const store::ExtractOptions& o = {},
                          bool gzip = false) {
    std::string tar = d.path + "/in.tar";
    test::write_tar(tar, entries, gzip);
    return run_file(tar, o);
  }
  store::ExtractStats run_file(const std::string& tar, const store::ExtractOptions& o = {}) {
    Fd in(::open(tar.c_str(), O_RDONLY | O_CLOEXEC));
    Fd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(in.valid());
    return store::extract_archive(in.get(), dir.get(), o, "in.tar");
  }
  bool outside_empty() const { return fs::list_dir(outside).empty(); }
};

struct stat lstat_of(const std::string& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st;
}

std::string link_of(const std::string& p) {
  char b[256];
  ssize_t n = ::readlink(p.c_str(), b, sizeof b);
  REQUIRE(n >= 0);
  return std::string(b, static_cast<size_t>(n));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("extract: files, directories, links and nodes with their owners, modes, times, xattrs" *
          test::needs_root()) {
  Rig r;
  // A v2 file capability blob: cap_net_bind_service in the permitted set.
  std::string cap(20, '\0');
  cap[3] = 0x02;  // VFS_CAP_REVISION_2, little-endian magic_etc
  cap[5] = 0x04;  // permitted[0] bit 10
  auto st = r.run({
      {.name = "./etc/", .type = AE_IFDIR, .perm = 0755, .uid = 0, .mtime = 1600000000},
      {.name = "./etc/hostname", .perm = 0644, .data = "box\n", .uid = 1234, .gid = 4321},
      {.name = "usr/bin/ping",
       .perm = 04755,
       .data = "ELF",
       .xattrs = {{"security.capability", cap}}},
      {.name = "usr/bin/tagged", .perm = 0600, .data = "x", .xattrs = {{"user.space", "yes"}}},
      {.name = "usr/lib", .type = AE_IFLNK, .perm = 0777, .link = "/nonexistent/anywhere"},
      {.name = "usr/bin/pong", .hardlink = "usr/bin/ping"},
      {.name = "dev/null", .type = AE_IFCHR, .perm = 0666, .rdev = makedev(1, 3)},
      {.name = "run/fifo", .type = AE_IFIFO, .perm = 0600},
  });
  CHECK(st.entries == 8);
  CHECK(st.bytes == 4 + 3 + 1);
  CHECK(fs::read_file(r.root + "/etc/hostname") == "box\n");
  auto h = lstat_of(r.root + "/etc/hostname");
  CHECK(h.st_uid == 1234);
  CHECK(h.st_gid == 4321);
  CHECK((h.st_mode & 07777) == 0644);
  CHECK(h.st_mtim.tv_sec == 1700000000);
  CHECK(lstat_of(r.root + "/etc").st_mtim.tv_sec == 1600000000);  // set after its contents
  auto ping = lstat_of(r.root + "/usr/bin/ping");
  CHECK((ping.st_mode & 07777) == 04755);  // setuid kept after chown
  char got[64];
  CHECK(::getxattr((r.root + "/usr/bin/ping").c_str(), "security.capability", got, sizeof got) ==
        20);
  CHECK(::getxattr((r.root + "/usr/bin/tagged").c_str(), "user.space", got, sizeof got) == 3);
  CHECK(lstat_of(r.root + "/usr/bin/pong").st_ino == ping.st_ino);
  CHECK(S_ISLNK(lstat_of(r.root + "/usr/lib").st_mode));
  CHECK(link_of(r.root + "/usr/lib") == "/nonexistent/anywhere");  // stored, not followed
  auto dn = lstat_of(r.root + "/dev/null");
  CHECK(S_ISCHR(dn.st_mode));
  CHECK(dn.st_rdev == makedev(1, 3));
  CHECK(S_ISFIFO(lstat_of(r.root + "/run/fifo").st_mode));
}

TEST_CASE("extract: gzip input, replacing entries, owner override, setid and device refusal" *
          test::needs_root()) {
  Rig r;
  REQUIRE(::mkdir((r.root + "/d").c_str(), 0755) == 0);
  REQUIRE(::symlink(r.outside.c_str(), (r.root + "/s").c_str()) == 0);
  fs::write_file_atomic(r.root + "/f", "old");
  store::ExtractOptions o;
  o.owner_uid = 7;
  o.owner_gid = 8;
  o.keep_setid = false;
  r.run({{.name = "d", .data = "now a file"},  // a file replaces a directory
         {.name = "s/", .type = AE_IFDIR},     // a directory replaces a symlink (not followed)
         {.name = "s/in", .data = "inside"},
         {.name = "f", .type = AE_IFLNK, .link = "d"},  // a symlink replaces a file
         {.name = "suid", .perm = 06755, .data = "x", .uid = 0}},
        o, /*gzip=*/true);
  CHECK(fs::read_file(r.root + "/d") == "now a file");
  CHECK(S_ISDIR(lstat_of(r.root + "/s").st_mode));
  CHECK(fs::read_file(r.root + "/s/in") == "inside");
  CHECK(r.outside_empty());
  CHECK(S_ISLNK(lstat_of(r.root + "/f").st_mode));
  auto s = lstat_of(r.root + "/suid");
  CHECK((s.st_mode & 07777) == 0755);
  CHECK(s.st_uid == 7);
  CHECK(s.st_gid == 8);

  store::ExtractOptions nodev;
  nodev.devices = false;
  auto err =
      error_of([&] { r.run({{.name = "null", .type = AE_IFCHR, .rdev = makedev(1, 3)}}, nodev); });
  CHECK(err.find("device node") != std::string::npos);
}

// Needs root: the entries carry owners, which only root can give.
TEST_CASE("extract: hostile archives are refused and write nothing outside the root" *
          test::needs_root()) {
  Rig r;
  auto refused = [&](const std::vector<TarEntry>& entries, const std::string& why) {
    auto err = error_of([&] { r.run(entries); });
    CHECK_MESSAGE(err.find(why) != std::string::npos, err);
    CHECK(r.outside_empty());
  };
  refused({{.name = "../outside/evil", .data = "x"}}, "'..'");
  refused({{.name = r.outside + "/evil", .data = "x"}}, "absolute");
  // A symlink the archive plants, then a file written through it.
  refused(
      {{.name = "link", .type = AE_IFLNK, .link = r.outside}, {.name = "link/evil", .data = "x"}},
      "symbolic link");
  refused(
      {{.name = "rel", .type = AE_IFLNK, .link = "../outside"}, {.name = "rel/evil", .data = "x"}},
      "symbolic link");
  // Hard links out of the root, to something not extracted, to a directory.
  refused({{.name = "h", .hardlink = "../outside/x"}}, "'..'");
  refused({{.name = "h", .hardlink = "/etc/passwd"}}, "absolute");
  refused({{.name = "h", .hardlink = "missing"}}, "has not created");
  refused({{.name = "dir/", .type = AE_IFDIR}, {.name = "h", .hardlink = "dir"}}, "directory");
  // Through a link planted as a hard link's parent.
  refused({{.name = "l2", .type = AE_IFLNK, .link = r.outside}, {.name = "h", .hardlink = "l2/x"}},
          "symbolic link");
  // A file where a directory is needed.
  refused({{.name = "plain", .data = "x"}, {.name = "plain/x", .data = "y"}}, "not a directory");
}

TEST_CASE("extract: truncated, corrupted and non-tar input is an error") {
  Rig r;
  std::string tar = r.d.path + "/t.tar";
  test::write_tar(tar, {{.name = "big", .data = std::string(100000, 'a')}});
  std::string bytes = fs::read_file(tar);
  fs::write_file_atomic(tar, bytes.substr(0, 20000));
  CHECK_THROWS_AS(r.run_file(tar), Error);
  std::string garbage = r.d.path + "/g";
  fs::write_file_atomic(garbage, std::string(4096, 'z'));
  auto err = error_of([&] { r.run_file(garbage); });
  CHECK(err.find("in.tar") != std::string::npos);
  CHECK(r.outside_empty());
}

TEST_CASE("extract: OCI whiteouts remove what lower layers made, never this layer's entries" *
          test::needs_root()) {
  Rig r;
  store::ExtractOptions layer;
  layer.whiteouts = true;
  r.run({{.name = "a/", .type = AE_IFDIR},
         {.name = "a/x", .data = "1"},
         {.name = "a/y/", .type = AE_IFDIR},
         {.name = "a/y/deep", .data = "2"},
         {.name = "b", .data = "3"},
         {.name = "c/", .type = AE_IFDIR},
         {.name = "c/keep", .data = "4"}},
        layer);
  r.run({{.name = "a/new", .data = "5"},  // this layer's, before the opaque marker
         {.name = "a/.wh..wh..opq"},
         {.name = ".wh.b"},
         {.name = "c/.wh.gone"},  // whiteout of something absent: fine
         {.name = "d", .data = "6"},
         {.name = ".wh.d"}},  // whiteout of this layer's own entry: kept
        layer);
  CHECK(fs::list_dir(r.root + "/a") == std::vector<std::string>{"new"});
  CHECK_FALSE(fs::exists(r.root + "/b"));
  CHECK(fs::read_file(r.root + "/c/keep") == "4");
  CHECK(fs::read_file(r.root + "/d") == "6");
  CHECK_FALSE(fs::exists(r.root + "/.wh.b"));
  CHECK_FALSE(fs::exists(r.root + "/a/.wh..wh..opq"));
  // Without whiteouts, such names are ordinary files.
  r.run({{.name = ".wh.keepme", .data = "7"}});
  CHECK(fs::exists(r.root + "/.wh.keepme"));
  // A malformed whiteout is refused.
  CHECK_THROWS_AS(r.run({{.name = ".wh..."}}, layer), Error);
}
