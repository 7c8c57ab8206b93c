// Unit tests for store/archive_entries.h's ArchiveWriter, the tar stream `space cp ID:SRC -`
// writes from a guest's entries: an honest tree reads back (with libarchive, linked here) with
// its names normalised, kinds, link targets and data; and every hostile entry (`..`, absolute
// names, a hard link out of the tree or to what the stream does not hold, an entry named as or
// beneath an earlier symbolic link, a root that is not a directory) is refused with its name in
// the error, before anything of it reaches the stream, which is then abandoned without its
// end-of-archive blocks.
#include <archive.h>
#include <archive_entry.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "store/archive_entries.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"

using namespace space;
using space::test::unnamed_file;

namespace {

TreeEntry entry(EntryKind kind, std::string name, std::string target = "", std::string data = "") {
  TreeEntry e;
  e.kind = kind;
  e.name = std::move(name);
  e.target = std::move(target);
  e.mode = kind == EntryKind::Dir ? 0755 : 0644;
  e.size = data.size();
  return e;
}

// One entry of a tar stream as libarchive reads it back (a directory's name without the slash
// libarchive gives it).
struct Read {
  std::string name, hardlink, symlink, data;
  mode_t type = 0;
};

// Reads the tar stream in `fd` from its start, as far as it goes (an abandoned stream ends
// early); `complete` says whether it ended with its end-of-archive blocks.
std::vector<Read> read_back(int fd, bool* complete = nullptr) {
  REQUIRE(::lseek(fd, 0, SEEK_SET) == 0);
  archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  std::vector<Read> out;
  bool ok = false;
  if (archive_read_open_fd(a, fd, 4096) == ARCHIVE_OK) {
    archive_entry* e;
    for (;;) {
      int r = archive_read_next_header(a, &e);
      if (r == ARCHIVE_EOF) {
        ok = true;
        break;
      }
      if (r < ARCHIVE_WARN) break;
      Read x;
      x.name = archive_entry_pathname(e);
      if (x.name.size() > 1 && x.name.ends_with("/")) x.name.pop_back();  // directories' slash
      if (const char* h = archive_entry_hardlink(e)) x.hardlink = h;
      if (const char* s = archive_entry_symlink(e)) x.symlink = s;
      x.type = archive_entry_filetype(e);
      char buf[4096];
      la_ssize_t n;
      while ((n = archive_read_data(a, buf, sizeof buf)) > 0) x.data.append(buf, size_t(n));
      out.push_back(std::move(x));
    }
  }
  archive_read_free(a);
  if (complete) *complete = ok;
  return out;
}

// What an extractor would do wrong with `entries`, or "": a name or hard-link target that is
// absolute or has a `..` component, an entry named as or beneath an earlier symbolic link, a
// hard link to what is not an earlier non-link entry.
std::string unsafe(const std::vector<Read>& entries) {
  std::vector<std::string> links, seen;
  auto climbs = [](const std::string& n) {
    return n.starts_with("/") || n == ".." || n.starts_with("../") || n.ends_with("/..") ||
           n.find("/../") != std::string::npos;
  };
  auto under_link = [&](const std::string& n) {
    for (const auto& l : links)
      if (n == l || n.starts_with(l + "/")) return true;
    return false;
  };
  for (const auto& e : entries) {
    if (climbs(e.name) || under_link(e.name)) return e.name;
    if (!e.hardlink.empty() && (climbs(e.hardlink) || under_link(e.hardlink) ||
                                std::find(seen.begin(), seen.end(), e.hardlink) == seen.end()))
      return e.name + " -> " + e.hardlink;
    (e.type == AE_IFLNK ? links : seen).push_back(e.name);
  }
  return "";
}

// Everything written to `fd`, as bytes.
std::string bytes_of(int fd) {
  REQUIRE(::lseek(fd, 0, SEEK_SET) == 0);
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, size_t(n));
  return s;
}

// Writes `entries` (a File's data is `size` bytes of 'x') to a new ArchiveWriter on `fd`, the
// last one expected to be refused: returns its error, or "<no error>".
std::string write_refused(int fd, const std::string& top, const std::vector<TreeEntry>& entries) {
  store::ArchiveWriter w(fd, top, "stdout");
  for (const auto& e : entries) {
    try {
      w.begin(e);
    } catch (const Error& err) {
      return err.what();
    }
    if (e.kind == EntryKind::File) w.data(std::vector<uint8_t>(e.size, 'x'));
  }
  w.close();
  return "<no error>";
}

}  // namespace

TEST_CASE("archive writer: a tree reads back with normalised names, kinds, links and data") {
  Fd fd = unnamed_file("tarw");
  {
    store::ArchiveWriter w(fd.get(), "top", "stdout");
    auto f = entry(EntryKind::File, "./d//f", "", "hello");
    w.begin(entry(EntryKind::Dir, ""));
    w.begin(entry(EntryKind::Dir, "d/"));
    w.begin(f);
    w.data(std::vector<uint8_t>{'h', 'e', 'l', 'l', 'o'});
    w.begin(entry(EntryKind::Symlink, "abs", "/etc"));  // a target is data, written as it is
    w.begin(entry(EntryKind::Symlink, "up", "../.."));
    w.begin(entry(EntryKind::Hardlink, "d/h", "d/f"));
    w.begin(entry(EntryKind::Hardlink, "abs2", "abs"));  // a hard-linked symbolic link: a copy
    w.begin(entry(EntryKind::Fifo, "p"));
    w.begin(entry(EntryKind::Hardlink, "p2", "./p"));
    w.close();
  }
  bool complete = false;
  auto r = read_back(fd.get(), &complete);
  CHECK(complete);
  CHECK(unsafe(r).empty());
  REQUIRE(r.size() == 9);
  CHECK(r[0].name == "top");
  CHECK(r[0].type == AE_IFDIR);
  CHECK(r[1].name == "top/d");
  CHECK(r[2].name == "top/d/f");
  CHECK(r[2].data == "hello");
  CHECK(r[3].symlink == "/etc");
  CHECK(r[4].symlink == "../..");
  CHECK(r[5].name == "top/d/h");
  CHECK(r[5].hardlink == "top/d/f");
  CHECK(r[6].name == "top/abs2");
  CHECK(r[6].type == AE_IFLNK);
  CHECK(r[6].symlink == "/etc");
  CHECK(r[6].hardlink.empty());
  CHECK(r[8].hardlink == "top/p");

  Fd fd2 = unnamed_file("tarw");
  {
    store::ArchiveWriter w(fd2.get(), "", "stdout");
    w.begin(entry(EntryKind::Dir, ""));
    w.begin(entry(EntryKind::File, "a"));
    w.close();
  }
  auto r2 = read_back(fd2.get());
  REQUIRE(r2.size() == 2);
  CHECK(r2[0].name == ".");
  CHECK(r2[1].name == "a");
}

TEST_CASE("archive writer: hostile names and link targets are refused and never written") {
  // Before each hostile entry, a file big enough that libarchive has written some of the stream.
  const std::string big(64 << 10, 'x');
  struct Case {
    std::vector<TreeEntry> entries;  // the last one is refused
    std::string why;                 // in the error
    std::string marker;              // if set: must not appear in the stream's bytes
  };
  using K = EntryKind;
  const std::vector<Case> cases = {
      {{entry(K::File, "../x")}, "'..'", "../x"},
      {{entry(K::File, "/abs")}, "absolute", "/abs"},
      {{entry(K::Dir, "a"), entry(K::File, "a/../../b")}, "'..'", "../b"},
      {{entry(K::Hardlink, "h", "../../etc/passwd")}, "links to '../../etc/passwd'", "etc/passwd"},
      {{entry(K::Hardlink, "h", "/etc/passwd")}, "absolute", "etc/passwd"},
      {{entry(K::Symlink, "l", "/etc"), entry(K::File, "l/passwd")}, "beneath 'top/l'", "passwd"},
      {{entry(K::Symlink, "l", "/etc"), entry(K::Dir, "l/sub")}, "beneath 'top/l'", "l/sub"},
      {{entry(K::Symlink, "l", "/"), entry(K::Symlink, "l/etc/x", "y")}, "beneath", "etc/x"},
      {{entry(K::Symlink, "l", "/etc/passwd"), entry(K::File, "./l")}, "again", ""},
      {{entry(K::File, "f"), entry(K::Symlink, "l", ".."), entry(K::Hardlink, "h", "l/f")},
       "beneath 'top/l'",
       "top/h"},
      {{entry(K::Hardlink, "h", "nothere")}, "not an earlier file", "nothere"},
      {{entry(K::Dir, "d"), entry(K::Hardlink, "h", "d")}, "not an earlier file", "top/h"},
      {{entry(K::Hardlink, "h", ".")}, "not an earlier file", "top/h"},
      {{entry(K::Symlink, "s", "")}, "without a target", "top/s"},
  };
  for (size_t i = 0; i < cases.size(); i++) {
    CAPTURE(i);
    const Case& c = cases[i];
    std::vector<TreeEntry> entries = {entry(K::Dir, ""), entry(K::File, "big", "", big)};
    entries.insert(entries.end(), c.entries.begin(), c.entries.end());
    Fd fd = unnamed_file("tarw");
    std::string err = write_refused(fd.get(), "top", entries);
    CAPTURE(err);
    CHECK(err.find("stdout: entry '" + c.entries.back().name + "'") != std::string::npos);
    CHECK(err.find(c.why) != std::string::npos);
    if (!c.marker.empty()) CHECK(bytes_of(fd.get()).find(c.marker) == std::string::npos);
    bool complete = true;
    auto got = read_back(fd.get(), &complete);
    CHECK(unsafe(got).empty());
    CHECK(got.size() <= 2);  // the top and the big file at most, never the hostile entries
    CHECK_FALSE(complete);   // abandoned: no end-of-archive blocks
  }

  // The root written as itself ("." with no top) must be a directory.
  Fd fd = unnamed_file("tarw");
  CHECK(write_refused(fd.get(), "", {entry(K::Symlink, "", "/etc")}).find("not a directory") !=
        std::string::npos);
  CHECK(bytes_of(fd.get()).empty());
  CHECK_THROWS_AS(store::ArchiveWriter(fd.get(), "a/b", "stdout"), Error);
  CHECK_THROWS_AS(store::ArchiveWriter(fd.get(), "..", "stdout"), Error);
}
