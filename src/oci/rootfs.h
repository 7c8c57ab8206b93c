// A bundle's root filesystem as a space image. An engine prepares root.path as a directory (an
// overlay mount of the image's layers, or a plain copy); a microVM needs a disk. The directory is
// turned into an ext4 image once and reused: the image is named after a digest of the tree's
// content (names, kinds, modes, owners, sizes, link targets, extended attributes and every file's
// bytes; not times), so containers of the same image, and every layer stack that yields the same
// files, share one disk, and each container gets its own reflinked copy at create.
#pragma once
#include <cstdint>
#include <string>

#include "store/context.h"

namespace space::oci {

// The hex SHA-256 of the tree at `dir` as described above. Throws naming the path on a read error.
std::string tree_digest(const std::string& dir);

struct RootfsImage {
  std::string name;      // "oci-<first 24 hex digits of the digest>"
  bool reused = false;   // it was in the store already
  double digest_ms = 0;  // time spent reading the tree
  double import_ms = 0;  // time spent making the disk (0 when reused)
};

// The image holding `dir`'s files, imported (image::import_image of a directory) when none holds
// them yet. Two creates racing to import the same tree both end with the same image.
RootfsImage rootfs_image(const store::Context& ctx, const std::string& dir);

}  // namespace space::oci
