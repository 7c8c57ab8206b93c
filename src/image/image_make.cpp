// Making an image all or nothing, shared by import and build; see image_make.h. The disk is made
// with mkfs.ext4 -d (sparse; its inode tables are left for the guest to treat as zero, which they
// are in a sparse file). Reusing a twin's disk is one FICLONE: the two files share every extent
// until one is written, and images are read-only.
#include "image/image_make.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "image/staging.h"
#include "store/btrfs.h"
#include "store/paths.h"
#include "store/state.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::image {
namespace {

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
         "make it again with a larger --size");
  fail("mkfs.ext4 " + proc::describe_status(r.status) + ": " + out);
}

// `to` (new) shares every extent of `from`; false if the filesystem cannot do that.
bool reflink(const std::string& from, const std::string& to, uint64_t bytes) {
  Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in) return false;  // the twin went away meanwhile
  struct stat st {};
  if (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode) || uint64_t(st.st_size) != bytes)
    return false;
  Fd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!out) throw_errno("create " + to);
  if (::ioctl(out.get(), FICLONE, in.get()) == 0) return true;
  int err = errno;
  ::unlink(to.c_str());
  if (err == EXDEV || err == EOPNOTSUPP || err == EINVAL || err == ENOTTY) return false;
  throw_errno("reflink " + from + " to " + to, err);
}

}  // namespace

ImageStage::ImageStage(std::string dir, std::string images, const ImageTarget& t,
                       proc::SignalGuard& sig)
    : dir_(std::move(dir)), images_(std::move(images)), target_(t), sig_(sig) {
  meta_.name = t.name;
  meta_.created = store::rfc3339_now();
  meta_.disk_bytes = t.disk_bytes;
}

void ImageStage::say(const std::string& line) const {
  if (target_.progress) target_.progress(line);
}

void ImageStage::status(const std::string& line) const {
  if (target_.status) target_.status(line);
}

bool ImageStage::reuse_twin() {
  auto twin = find_twin(images_in(images_), meta_);
  if (!twin) return false;
  if (!reflink(images_ + "/" + *twin + "/disk.ext4", dir_ + "/disk.ext4", meta_.disk_bytes)) {
    say("image " + *twin + " has the same content, but its disk cannot be shared here");
    return false;
  }
  say("same content as image " + *twin + " (" + meta_.digest.substr(0, 19) +
      "): its disk is reflinked, no new blocks");
  disk_ready_ = true;
  return true;
}

ImageMeta make_image(const store::Context& ctx, const ImageTarget& t,
                     const std::function<void(ImageStage&)>& fill) {
  proc::SignalGuard sig;
  const std::string dest = store::image_dir(ctx.root, t.name);  // validates the name first
  store::StorePaths sp = store::ensure_store(ctx, store::StoreUse::Create);
  fs::mkdir_p(sp.images, 0700);
  // A build that died (space was SIGKILLed) may hold a nested rootfs subvolume, which must go
  // before its parent can.
  sweep_dead_builds(sp.images, "image", [](const std::string& dir) {
    if (store::btrfs::is_subvolume(dir + "/rootfs")) store::remove_store_tree(dir + "/rootfs");
  });
  if (!t.force && fs::exists(dest))
    fail("image " + t.name + " already exists",
         "pass --force to replace it, or remove it with 'space image rm " + t.name + "'");

  const std::string build = build_dir_for(sp.images, t.name);
  store::btrfs::create_subvolume(build);
  auto remove_rootfs = [&](const std::string& rootfs) {
    if (!rootfs.empty() && rootfs.rfind(build + "/", 0) == 0 && fs::exists(rootfs))
      store::remove_store_tree(rootfs);
  };
  ImageStage stage(build, sp.images, t, sig);
  try {
    Fd held = lock_dir(build);
    if (!held) fail("lock " + build + ": already locked");
    fill(stage);
    sig.check();
    if (!stage.disk_ready()) {
      if (stage.rootfs().empty()) fail("internal: no root filesystem to make the disk of");
      stage.say("making the ext4 disk (" + store::human_size(t.disk_bytes) + ", sparse)");
      make_disk(stage.rootfs(), build + "/disk.ext4", t.disk_bytes);
      sig.check();
    }
    remove_rootfs(stage.rootfs());
    ImageMeta& m = stage.meta();
    json::save_file(build + "/image.json", image_meta_json(m), 0644);
    if (::syncfs(held.get()) != 0) throw_errno("sync " + build);
    store::btrfs::set_read_only(build, true);
    sig.check();
    install_build(build, dest, "image", t.name, t.force);
    stage.say("done: image " + t.name + " (" + m.kind + ")");
    return m;
  } catch (...) {
    try {
      remove_rootfs(stage.rootfs());  // a nested subvolume must go before its parent
      store::remove_store_tree(build);
    } catch (const Error& cleanup) {
      log::error("image " + t.name + ": cleanup failed: " + cleanup.what());
    }
    throw;
  }
}

}  // namespace space::image
