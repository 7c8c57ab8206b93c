// Turning a bundle's root directory into a content-named image (oci/rootfs.h).
#include "oci/rootfs.h"

#include <fcntl.h>

#include <chrono>

#include "image/image.h"
#include "store/paths.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/sha256.h"
#include "util/tree_walker.h"

namespace space::oci {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void field(Sha256& h, std::string_view s) {
  uint64_t n = s.size();
  h.update({reinterpret_cast<const uint8_t*>(&n), sizeof n});
  h.update(s);
}

void number(Sha256& h, uint64_t v) {
  h.update({reinterpret_cast<const uint8_t*>(&v), sizeof v});
}

// One stat on the create path, not a read of every image's image.json (image::list_images).
bool image_exists(const store::Context& ctx, const std::string& name) {
  return fs::exists(store::image_dir(ctx.root, name) + "/image.json");
}

}  // namespace

std::string tree_digest(const std::string& dir) {
  Fd top(::open(dir.c_str(), O_PATH | O_CLOEXEC | O_DIRECTORY));
  if (!top) throw_errno("open " + dir);
  Sha256 h;
  field(h, "space-oci-rootfs-1");
  try {
    walk_tree(top.get(), {}, [&](const TreeEntry& e, int fd) {
      number(h, static_cast<uint64_t>(e.kind));
      field(h, e.name);
      number(h, e.mode);
      number(h, e.uid);
      number(h, e.gid);
      number(h, e.size);
      field(h, e.target);
      number(h, e.rdev);
      number(h, e.xattrs.size());
      for (const auto& [k, v] : e.xattrs) {
        field(h, k);
        field(h, v);
      }
      if (fd >= 0)
        send_file_data(fd, e.size, 1u << 20, [&](const uint8_t* p, size_t n) { h.update({p, n}); });
    });
  } catch (Error& e) {
    e.add_context("read the bundle's root " + dir);
    throw;
  }
  return h.hex();
}

RootfsImage rootfs_image(const store::Context& ctx, const std::string& dir) {
  RootfsImage r;
  auto t0 = std::chrono::steady_clock::now();
  r.name = "oci-" + tree_digest(dir).substr(0, 24);
  r.digest_ms = ms_since(t0);
  if (image_exists(ctx, r.name)) {
    r.reused = true;
    return r;
  }
  auto t1 = std::chrono::steady_clock::now();
  image::ImageImportOptions o;
  o.name = r.name;
  o.source = dir;
  try {
    image::import_image(ctx, o);
  } catch (Error&) {
    // Another create imported the same tree meanwhile: its image is ours.
    if (!image_exists(ctx, r.name)) throw;
    r.reused = true;
  }
  r.import_ms = ms_since(t1);
  return r;
}

}  // namespace space::oci
