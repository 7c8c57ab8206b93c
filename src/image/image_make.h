// The part every way of making an image shares (import, build): one all-or-nothing staging
// subvolume (image/staging.h) in which the maker puts a root filesystem, or reuses the disk of an
// image with the same content (a reflink, no new blocks); then mkfs.ext4 -d makes the sparse
// disk, the root filesystem goes, image.json is written and the subvolume is made read-only and
// renamed into place. On any error or signal the subvolume is deleted. Internal to core.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "image/image.h"
#include "store/context.h"
#include "util/process.h"

namespace space::image {

// What is being made, and how to report it.
struct ImageTarget {
  std::string name;
  uint64_t disk_bytes = kDefaultImageBytes;
  bool force = false;
  std::function<void(const std::string&)> progress;  // one line per step, may be empty
  std::function<void(const std::string&)> status;    // within a step, what is happening now
};

// The staging of one image, handed to its maker.
class ImageStage {
 public:
  ImageStage(std::string dir, std::string images, const ImageTarget& t, proc::SignalGuard& sig);
  // The staging subvolume (its own files: disk.ext4, image.json; the maker's: anything else).
  const std::string& dir() const { return dir_; }
  // Filled in with name, created and disk_bytes; the maker sets the rest.
  ImageMeta& meta() { return meta_; }
  proc::SignalGuard& signals() { return sig_; }
  // Reports one step.
  void say(const std::string& line) const;
  // Reports what the current step is doing (a terminal's status line).
  void status(const std::string& line) const;
  // The directory whose files become the disk. One inside dir() is deleted once the disk is
  // made (a nested subvolume too).
  void set_rootfs(std::string path) { rootfs_ = std::move(path); }
  const std::string& rootfs() const { return rootfs_; }
  // If an image with meta()'s digest (not empty), platform and disk size exists, reflinks its
  // disk as this one's and returns true: the maker then has nothing to unpack. False if none
  // does, or the filesystem cannot share extents.
  bool reuse_twin();
  bool disk_ready() const { return disk_ready_; }

 private:
  std::string dir_, images_, rootfs_;
  const ImageTarget& target_;
  proc::SignalGuard& sig_;
  ImageMeta meta_;
  bool disk_ready_ = false;
};

// Makes image t.name: checks the name and that it is free (unless t.force), runs `fill` in a new
// staging subvolume, then makes the disk and installs the image. Throws space::Error; nothing is
// left behind on failure.
ImageMeta make_image(const store::Context& ctx, const ImageTarget& t,
                     const std::function<void(ImageStage&)>& fill);

}  // namespace space::image
