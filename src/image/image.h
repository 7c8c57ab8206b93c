// Images: the users' own root filesystems. An image is a read-only subvolume
// store/images/<name> holding disk.ext4 (a sparse ext4 filesystem made from the image's files)
// and image.json (where it came from, its digest and its config). `image import` makes one from
// an OCI image layout or archive, a docker archive, a root filesystem tarball (plain or
// compressed) or a directory: archives are unpacked with store/extract (safe against hostile
// entries), OCI and docker layers are verified (store/oci) and applied in order with their
// whiteouts, and mkfs.ext4 -d turns the result into the disk. `image build --debian` makes one
// with mmdebstrap. A source whose digest matches an image already stored shares that image's
// disk (a reflink). All or nothing, like a template build (image/image_make.h, image/staging.h).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "store/context.h"
#include "store/oci.h"
#include "util/field_list.h"
#include "util/json.h"

namespace space::image {

// image.json's layout version.
constexpr uint32_t kImageFormat = 1;
// Default capacity of an image's disk: sparse, so only what the files use takes space.
constexpr uint64_t kDefaultImageBytes = 4ULL << 30;

struct ImageMeta {
  uint32_t format = kImageFormat;
  std::string name;
  std::string created;      // RFC 3339, UTC
  std::string source;       // the path it was imported from (absolute), or "debian:SUITE"
  std::string kind;         // "oci", "docker", "tarball", "directory" or "debian"
  std::string digest;       // sha256:<hex> of the OCI manifest, docker config or tarball; "" for
                            // a directory or a Debian build
  std::string platform;     // "linux/amd64" for OCI, docker and Debian images, else ""
  uint64_t disk_bytes = 0;  // capacity of disk.ext4
  store::ImageConfig config;
  // proto/fields.h: image.json
  SPACE_FIELDS(format, name, created, source, kind, digest, platform, disk_bytes, config);
  void check() const;  // a format this space reads
};

json::Value image_meta_json(const ImageMeta& m);
// Parses image.json (strict about types; a newer format is an error); `source` names it.
ImageMeta parse_image_meta(const json::Value& v, const std::string& source);

struct ImageImportOptions {
  std::string name;
  std::string source;
  std::string platform = "linux/amd64";
  uint64_t disk_bytes = kDefaultImageBytes;
  bool force = false;
  std::function<void(const std::string&)> progress;  // one line per step, may be empty
  std::function<void(const std::string&)> status;    // entries and bytes unpacked so far, for a
                                                     // terminal's status line; may be empty
};
// Imports `o.source` as image `o.name`. Throws space::Error (exit 125) naming what was wrong.
ImageMeta import_image(const store::Context& ctx, const ImageImportOptions& o);

struct DebianBuildOptions {
  std::string name;
  std::string suite;                  // bookworm, trixie, sid, stable ...
  std::vector<std::string> packages;  // installed on top of the essential set and apt
  std::string mirror;  // "": the host's apt sources for the host's own suite, else deb.debian.org
  uint64_t disk_bytes = kDefaultImageBytes;
  bool force = false;
  std::function<void(const std::string&)> progress;  // one line per phase, may be empty
  std::function<void(const std::string&)> status;    // within a phase, what is happening now
                                                     // (for a terminal's status line); may be empty
};
// Builds image `o.name` from Debian with mmdebstrap (kind "debian", source "debian:SUITE").
// Throws space::Error (exit 125) naming what was wrong and the fix; nothing is left behind.
ImageMeta build_debian_image(const store::Context& ctx, const DebianBuildOptions& o);

struct ImageInfo {
  std::string name;
  std::optional<ImageMeta> meta;  // unset when image.json is unreadable
  std::string problem;
  uint64_t used_bytes = 0;  // allocated size of its files
};
// Every image, sorted by name. Does not create the store.
std::vector<ImageInfo> list_images(const store::Context& ctx);
// The images in the images directory `dir` (store/images), sorted by name.
std::vector<ImageInfo> images_in(const std::string& dir);
// The first of `images` whose disk holds what one made for `m` would: the same digest (not
// empty: a directory or a Debian build has none), platform and disk size; nullopt if none.
// Unreadable images never match; one of `m`'s own name may (--force with the same content).
std::optional<std::string> find_twin(const std::vector<ImageInfo>& images, const ImageMeta& m);
// Image `name`; throws (with a hint) if it does not exist.
ImageInfo inspect_image(const store::Context& ctx, const std::string& name);
json::Value image_info_json(const ImageInfo& i);
// Deletes image `name`.
void remove_image(const store::Context& ctx, const std::string& name);
// "4G", "512M", "1073741824" -> bytes; throws on anything else or below 64 MiB.
uint64_t parse_disk_size(const std::string& s);

}  // namespace space::image
