// `image import`: a source (OCI layout or archive, docker archive, root filesystem tarball,
// directory) to an image in the store; see image.h. It fills a staging subvolume
// (image/image_make.h): archives are unpacked there with store/extract and layers applied in order
// into rootfs/; when the source's digest (a file's sha256, an OCI manifest's, a docker config's)
// matches an image already in the store, its disk is shared instead and nothing is unpacked.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "image/image.h"
#include "image/image_make.h"
#include "store/extract.h"
#include "store/oci.h"
#include "store/paths.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/sha256.h"

namespace space::image {
namespace {

Fd open_dir(const std::string& path) {
  Fd d(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d) throw_errno("open " + path);
  return d;
}

// Extraction progress as a status line: "<what>: 1234 entries, 56.7 MiB".
std::function<void(uint64_t, uint64_t)> unpack_status(const ImageStage& st, std::string what) {
  return [&st, what = std::move(what)](uint64_t entries, uint64_t bytes) {
    char mib[32];
    std::snprintf(mib, sizeof mib, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
    st.status(what + ": " + std::to_string(entries) + " entries, " + mib);
  };
}

// Applies `plan`'s layers, bottom first, to the new directory `rootfs`.
void apply_layers(const store::ImagePlan& plan, const std::string& rootfs, ImageStage& st) {
  if (::mkdir(rootfs.c_str(), 0755) != 0) throw_errno("create " + rootfs);
  Fd root = open_dir(rootfs);
  store::ExtractOptions opts;
  opts.whiteouts = true;
  for (size_t i = 0; i < plan.layers.size(); i++) {
    const auto& l = plan.layers[i];
    const std::string step =
        "layer " + std::to_string(i + 1) + "/" + std::to_string(plan.layers.size());
    st.say("applying " + step + " (" + l.digest.substr(0, 19) + ")");
    opts.progress = unpack_status(st, step);
    Fd in(::open(l.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!in) throw_errno("open layer " + l.path);
    store::extract_archive(in.get(), root.get(), opts, "layer " + l.digest);
    st.signals().check();
  }
}

void take_plan(ImageMeta& m, const store::ImagePlan& plan) {
  m.kind = plan.kind;
  m.digest = plan.digest;
  m.platform = plan.platform;
  m.config = plan.config;
}

// An OCI or docker image read into `plan`: its layers into <staging>/rootfs, unless an image of
// the same digest already has the disk.
void stage_plan(ImageStage& st, const store::ImagePlan& plan) {
  take_plan(st.meta(), plan);
  if (st.reuse_twin()) return;
  st.set_rootfs(st.dir() + "/rootfs");
  apply_layers(plan, st.rootfs(), st);
}

bool is_image(const std::string& dir) {
  return store::is_oci_layout(dir) || store::is_docker_archive(dir);
}

store::ImagePlan read_plan(const std::string& dir, const std::string& platform) {
  return store::is_oci_layout(dir) ? store::read_oci_layout(dir, platform)
                                   : store::read_docker_archive(dir);
}

// A file: its digest first (a tarball imported before is not unpacked again), then unpacked;
// an OCI or docker archive is applied as its layers, anything else is the root filesystem.
void stage_file(ImageStage& st, const std::string& src, const std::string& platform) {
  Fd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) throw_errno("open " + src);
  ImageMeta& m = st.meta();
  m.kind = "tarball";
  m.digest = "sha256:" + sha256_fd(in.get());
  if (st.reuse_twin()) return;
  if (::lseek(in.get(), 0, SEEK_SET) != 0) throw_errno("rewind " + src);
  st.say("unpacking " + src);
  const std::string unpacked = st.dir() + "/unpacked";
  if (::mkdir(unpacked.c_str(), 0755) != 0) throw_errno("create " + unpacked);
  st.set_rootfs(unpacked);
  store::ExtractOptions opts;
  opts.progress = unpack_status(st, "unpacking");
  store::extract_archive(in.get(), open_dir(unpacked).get(), opts, src);
  st.signals().check();
  if (!is_image(unpacked)) return;
  auto plan = read_plan(unpacked, platform);
  stage_plan(st, plan);
  fs::remove_tree(unpacked);
}

}  // namespace

ImageMeta import_image(const store::Context& ctx, const ImageImportOptions& o) {
  try {
    store::validate_id(o.name, "image name");
    const std::string src = fs::absolute(o.source);
    struct stat st;
    if (::stat(src.c_str(), &st) != 0) throw_errno(src);
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
      fail(src + " is neither a directory nor a file",
           "import an OCI layout, an OCI or docker archive, a tarball or a directory");
    ImageTarget t{o.name, o.disk_bytes, o.force, o.progress, o.status};
    return make_image(ctx, t, [&](ImageStage& stage) {
      stage.meta().source = src;
      if (!S_ISDIR(st.st_mode)) {
        stage_file(stage, src, o.platform);
      } else if (is_image(src)) {
        stage.say("reading " + src);
        stage_plan(stage, read_plan(src, o.platform));
      } else {
        stage.meta().kind = "directory";
        stage.set_rootfs(src);
      }
    });
  } catch (Error& e) {
    e.add_context("import image " + o.name + " from " + o.source);
    throw;
  }
}

}  // namespace space::image
