// Extracting a tar stream (plain or compressed, read by libarchive) under a directory, safe
// against hostile archives: an entry can create, replace or delete files only beneath that
// directory. Names are checked as names (no absolute path, no `..`), and every directory on the
// way to an entry is opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) from the root's descriptor, so no entry is ever
// written through a symbolic link, whoever planted it; the entry itself is created with
// O_NOFOLLOW / AT_SYMLINK_NOFOLLOW semantics, replacing what was there. Hard links must name an
// earlier entry's path beneath the root. Learned from docker cp's CVE-2018-15664 and
// CVE-2019-14271: no path string is trusted, only descriptors.
// With `whiteouts` (OCI image layers), `.wh.NAME` deletes NAME from the layers below and
// `.wh..wh..opq` empties its directory of them; entries of the same layer are kept.
// Used by image import (a layer onto a root filesystem), and meant for `space cp`.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace space::store {

struct ExtractOptions {
  bool whiteouts = false;          // interpret OCI whiteout entries
  bool devices = true;             // create device nodes and fifos (false: refuse them)
  bool keep_setid = true;          // keep setuid/setgid bits (false: clear them)
  std::optional<uid_t> owner_uid;  // set: every entry belongs to this uid/gid, not the archive's
  std::optional<gid_t> owner_gid;
  std::function<void(uint64_t entries, uint64_t bytes)> progress;  // after each entry, optional
};

struct ExtractStats {
  uint64_t entries = 0;
  uint64_t bytes = 0;  // file data written
};

// The components of archive entry name `name`, with "." and empty ones dropped ("./a//b/" ->
// {a, b}; "." -> {}). Throws space::Error for an absolute name, a `..` component, a NUL byte or
// a component longer than NAME_MAX.
std::vector<std::string> entry_components(std::string_view name);

// Extracts the archive read from `archive_fd` under the directory `root_fd`. `origin` names the
// archive in errors. Throws space::Error on the first refused or failed entry, leaving what it
// extracted so far (callers extract into a staging directory and delete it on failure).
ExtractStats extract_archive(int archive_fd, int root_fd, const ExtractOptions& opts,
                             const std::string& origin);

}  // namespace space::store
