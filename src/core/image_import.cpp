// `image import`: a source (OCI layout or archive, docker archive, root filesystem tarball,
// directory) to an image in the store; see image.h. The work happens in a hidden subvolume
// (core/staging.h): archives are unpacked there with store/extract, layers applied in order into
// rootfs/, mkfs.ext4 -d makes disk.ext4 (sparse; its inode tables are left for the guest to
// treat as zero, which they are in a sparse file), the staging trees are deleted, image.json is
// written, and the subvolume is made read-only and renamed into place.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/image.h"
#include "core/staging.h"
#include "store/btrfs.h"
#include "store/extract.h"
#include "store/paths.h"
#include "store/state.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"
#include "util/sha256.h"

namespace space::core {
namespace {

Fd open_dir(const std::string& path) {
  Fd d(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d) throw_errno("open " + path);
  return d;
}

// Applies `plan`'s layers, bottom first, to the new directory `rootfs`.
void apply_layers(const store::ImagePlan& plan, const std::string& rootfs, proc::SignalGuard& sig,
                  const std::function<void(const std::string&)>& say) {
  if (::mkdir(rootfs.c_str(), 0755) != 0) throw_errno("create " + rootfs);
  Fd root = open_dir(rootfs);
  store::ExtractOptions opts;
  opts.whiteouts = true;
  for (size_t i = 0; i < plan.layers.size(); i++) {
    const auto& l = plan.layers[i];
    say("applying layer " + std::to_string(i + 1) + "/" + std::to_string(plan.layers.size()) +
        " (" + l.digest.substr(0, 19) + ")");
    Fd in(::open(l.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!in) throw_errno("open layer " + l.path);
    store::extract_archive(in.get(), root.get(), opts, "layer " + l.digest);
    sig.check();
  }
}

void take_plan(ImageMeta& m, const store::ImagePlan& plan) {
  m.kind = plan.kind;
  m.digest = plan.digest;
  m.platform = plan.platform;
  m.config = plan.config;
}

// mkfs.ext4 -d: the files of `rootfs` (owners, modes, links, devices, xattrs) into `disk`.
void make_disk(const std::string& rootfs, const std::string& disk, uint64_t bytes) {
  std::string mkfs = proc::find_program("mkfs.ext4");
  if (mkfs.empty()) fail("mkfs.ext4 not found", "apt-get install e2fsprogs");
  {
    Fd fd(::open(disk.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd) throw_errno("create " + disk);
    if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) throw_errno("size " + disk);
  }
  auto r = proc::run({mkfs, "-q", "-F", "-L", "space-image", "-m", "0", "-E",
                      "nodiscard,lazy_itable_init=1,lazy_journal_init=1", "-d", rootfs, disk});
  if (r.ok()) return;
  std::string out = r.output.size() > 600 ? r.output.substr(r.output.size() - 600) : r.output;
  if (out.find("Could not allocate block") != std::string::npos ||
      out.find("No space left") != std::string::npos ||
      out.find("Not enough space") != std::string::npos)
    fail("the image's files do not fit in a " + store::human_size(bytes) + " disk",
         "import it again with a larger --size");
  fail("mkfs.ext4 " + proc::describe_status(r.status) + ": " + out);
}

}  // namespace

ImageMeta import_image(const store::Context& ctx, const ImageImportOptions& o) {
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  proc::SignalGuard sig;
  try {
    store::validate_id(o.name, "image name");
    const std::string src = fs::absolute(o.source);
    struct stat st;
    if (::stat(src.c_str(), &st) != 0) throw_errno(src);
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
      fail(src + " is neither a directory nor a file",
           "import an OCI layout, an OCI or docker archive, a tarball or a directory");
    store::StorePaths sp = store::ensure_store(ctx, store::StoreUse::Create);
    fs::mkdir_p(sp.images, 0700);
    sweep_dead_builds(sp.images, "image");
    const std::string dest = sp.images + "/" + o.name;
    if (!o.force && fs::exists(dest))
      fail("image " + o.name + " already exists",
           "pass --force to replace it, or remove it with 'space image rm " + o.name + "'");

    const std::string build = build_dir_for(sp.images, o.name);
    store::btrfs::create_subvolume(build);
    try {
      Fd held = lock_dir(build);
      if (!held) fail("lock " + build + ": already locked");
      ImageMeta m;
      m.name = o.name;
      m.created = store::rfc3339_now();
      m.source = src;
      m.disk_bytes = o.disk_bytes;
      std::string rootfs = build + "/rootfs";
      if (S_ISDIR(st.st_mode)) {
        if (store::is_oci_layout(src) || store::is_docker_archive(src)) {
          say("reading " + src);
          auto plan = store::is_oci_layout(src) ? store::read_oci_layout(src, o.platform)
                                                : store::read_docker_archive(src);
          take_plan(m, plan);
          apply_layers(plan, rootfs, sig, say);
        } else {
          m.kind = "directory";
          rootfs = src;
        }
      } else {
        say("unpacking " + src);
        Fd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
        if (!in) throw_errno("open " + src);
        const std::string digest = "sha256:" + sha256_fd(in.get());
        if (::lseek(in.get(), 0, SEEK_SET) != 0) throw_errno("rewind " + src);
        const std::string unpacked = build + "/unpacked";
        if (::mkdir(unpacked.c_str(), 0755) != 0) throw_errno("create " + unpacked);
        store::extract_archive(in.get(), open_dir(unpacked).get(), {}, src);
        sig.check();
        if (store::is_oci_layout(unpacked) || store::is_docker_archive(unpacked)) {
          auto plan = store::is_oci_layout(unpacked) ? store::read_oci_layout(unpacked, o.platform)
                                                     : store::read_docker_archive(unpacked);
          take_plan(m, plan);
          apply_layers(plan, rootfs, sig, say);
          fs::remove_tree(unpacked);
        } else {
          m.kind = "tarball";
          m.digest = digest;
          rootfs = unpacked;
        }
      }
      say("making the ext4 disk (" + store::human_size(o.disk_bytes) + ", sparse)");
      make_disk(rootfs, build + "/disk.ext4", o.disk_bytes);
      sig.check();
      if (rootfs.rfind(build + "/", 0) == 0) fs::remove_tree(rootfs);
      json::save_file(build + "/image.json", image_meta_json(m), 0644);
      if (::syncfs(held.get()) != 0) throw_errno("sync " + build);
      store::btrfs::set_read_only(build, true);
      sig.check();
      install_build(build, dest, "image", o.name, o.force);
      say("done: image " + o.name + " (" + m.kind + ")");
      return m;
    } catch (...) {
      try {
        store::remove_store_tree(build);
      } catch (const Error& cleanup) {
        log::error("image import " + o.name + ": cleanup failed: " + cleanup.what());
      }
      throw;
    }
  } catch (Error& e) {
    e.add_context("import image " + o.name + " from " + o.source);
    throw;
  }
}

}  // namespace space::core
