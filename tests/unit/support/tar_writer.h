// TarWriter: builds tar archives for the extraction tests with libarchive's writer (linked into
// the test binary directly), including entries no well-behaved tool writes: `..` and absolute
// names, links pointing outside, whiteouts, device nodes.
#pragma once
#include <archive.h>
#include <archive_entry.h>
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <string>
#include <utility>
#include <vector>

namespace space::test {

struct TarEntry {
  std::string name;
  mode_t type = AE_IFREG;  // AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFCHR, AE_IFIFO
  mode_t perm = 0644;
  std::string data;      // file contents
  std::string link;      // symlink target
  std::string hardlink;  // hard link target (the entry is then a link)
  int64_t uid = 0, gid = 0;
  int64_t mtime = 1700000000;
  dev_t rdev = 0;
  std::vector<std::pair<std::string, std::string>> xattrs;
};

// Writes `entries` as a pax tar archive to `path`, compressed with gzip if `gzip`.
inline void write_tar(const std::string& path, const std::vector<TarEntry>& entries,
                      bool gzip = false) {
  archive* a = archive_write_new();
  REQUIRE(archive_write_set_format_pax_restricted(a) == ARCHIVE_OK);
  if (gzip) REQUIRE(archive_write_add_filter_gzip(a) == ARCHIVE_OK);
  REQUIRE(archive_write_open_filename(a, path.c_str()) == ARCHIVE_OK);
  for (const auto& t : entries) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, t.name.c_str());
    archive_entry_set_filetype(e, t.type);
    archive_entry_set_perm(e, t.perm);
    archive_entry_set_uid(e, t.uid);
    archive_entry_set_gid(e, t.gid);
    archive_entry_set_mtime(e, t.mtime, 0);
    if (!t.link.empty()) archive_entry_set_symlink(e, t.link.c_str());
    if (!t.hardlink.empty()) archive_entry_set_hardlink(e, t.hardlink.c_str());
    if (t.rdev) archive_entry_set_rdev(e, t.rdev);
    for (const auto& [k, v] : t.xattrs)
      archive_entry_xattr_add_entry(e, k.c_str(), v.data(), v.size());
    archive_entry_set_size(e, t.type == AE_IFREG && t.hardlink.empty() ? t.data.size() : 0);
    REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
    if (t.type == AE_IFREG && t.hardlink.empty() && !t.data.empty())
      REQUIRE(archive_write_data(a, t.data.data(), t.data.size()) ==
              static_cast<la_ssize_t>(t.data.size()));
    archive_entry_free(e);
  }
  REQUIRE(archive_write_close(a) == ARCHIVE_OK);
  archive_write_free(a);
}

}  // namespace space::test
