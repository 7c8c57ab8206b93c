// Extracting a tar stream (plain or compressed, read by libarchive) under a directory, safe
// against hostile archives: each archive entry becomes a tree entry (util/tree.h) written by a
// TreeWriter (util/tree_writer.h), which creates, replaces or deletes files only beneath that
// directory and never through a symbolic link. With `whiteouts` (OCI image layers), `.wh.NAME`
// deletes NAME from the layers below and `.wh..wh..opq` empties its directory of them.
// Used by image import (a layer onto a root filesystem).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/tree.h"

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

// Extracts the archive read from `archive_fd` under the directory `root_fd`. `origin` names the
// archive in errors. Throws space::Error on the first refused or failed entry, leaving what it
// extracted so far (callers extract into a staging directory and delete it on failure).
ExtractStats extract_archive(int archive_fd, int root_fd, const ExtractOptions& opts,
                             const std::string& origin);

}  // namespace space::store
