// The store's set-up and inspection; see store.h. The fast path of ensure_store() is a single
// statfs of store/sandboxes. Everything else runs under an exclusive flock on the root directory
// (so two first commands do not both format an image), probes again, and acts on plan_store().
#include "store/store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "store/btrfs.h"
#include "store/config.h"
#include "store/loop.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"

namespace space::store {

namespace {

// statfs of `path`, or of its nearest existing parent.
bool nearest_on_btrfs(std::string path) {
  while (!fs::exists(path) && path.size() > 1) {
    auto slash = path.rfind('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return btrfs::on_btrfs(path);
}

// True if `path` is a mount point: its mount differs from its parent's.
bool is_mount_point(const std::string& path) {
  auto mnt = [](const std::string& p) -> uint64_t {
    struct statx stx {};
    if (::statx(AT_FDCWD, p.c_str(), 0, STATX_MNT_ID, &stx) != 0) return 0;
    return stx.stx_mnt_id;
  };
  uint64_t self = mnt(path);
  return self != 0 && self != mnt(path + "/..");
}

StoreProbe probe(const StorePaths& sp) {
  StoreProbe p;
  p.store_btrfs = btrfs::on_btrfs(sp.sandboxes);
  p.root_btrfs = nearest_on_btrfs(sp.root);
  p.image_exists = fs::exists(sp.image);
  if (!p.store_btrfs) p.plain_sandboxes = !fs::list_dir(sp.sandboxes).empty();
  return p;
}

void make_dirs(const StorePaths& sp) {
  fs::mkdir_p(sp.dir, 0700);
  fs::mkdir_p(sp.templates, 0700);
  fs::mkdir_p(sp.images, 0700);
  fs::mkdir_p(sp.sandboxes, 0700);
}

// The store's mount flags: nosuid and nodev, because image imports and Debian builds put
// setuid files and device nodes from untrusted archives in it, which must mean nothing on the host.
constexpr unsigned long kStoreMountFlags = MS_NOATIME | MS_NOSUID | MS_NODEV;

void mount_store(const StorePaths& sp) {
  fs::mkdir_p(sp.dir, 0700);
  std::string dev = loop::mount_image(sp.image, sp.dir, "btrfs", kStoreMountFlags, "");
  log::info("store: mounted " + sp.image + " on " + sp.dir + " through " + dev);
}

// A loopback store mounted by an earlier version, without nosuid and nodev, gets them now.
void harden_mount(const StorePaths& sp) {
  struct statvfs vf {};
  if (::statvfs(sp.dir.c_str(), &vf) != 0) return;
  if ((vf.f_flag & ST_NOSUID) && (vf.f_flag & ST_NODEV)) return;
  if (!is_mount_point(sp.dir) || !fs::exists(sp.image)) return;  // not our loopback store
  if (::mount(nullptr, sp.dir.c_str(), nullptr, MS_REMOUNT | kStoreMountFlags, nullptr) != 0) {
    log::warn("store: cannot remount " + sp.dir + " nosuid,nodev: " + std::strerror(errno));
    return;
  }
  log::info("store: remounted " + sp.dir + " nosuid,nodev");
}

// A sparse image of `gib` GiB, formatted btrfs, renamed into place only once complete.
void create_image(const StorePaths& sp, uint32_t gib) {
  std::string mkfs = proc::find_program("mkfs.btrfs");
  if (mkfs.empty())
    fail("mkfs.btrfs not found: the root " + sp.root +
             " is not on btrfs, so the store needs a "
             "btrfs loopback image",
         "apt-get install btrfs-progs (or put the root on a btrfs filesystem)");
  std::string tmp = sp.image + ".new";
  try {
    {
      Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
      if (!fd) throw_errno("create " + tmp);
      if (::ftruncate(fd.get(), off_t(gib) << 30) != 0) throw_errno("size " + tmp);
    }
    // One device: no point in duplicating metadata on a loopback file.
    auto r = proc::run({mkfs, "-q", "-L", "space-store", "-m", "single", "-d", "single", tmp});
    if (!r.ok())
      fail("mkfs.btrfs " + proc::describe_status(r.status) + ": " +
           (r.output.size() > 600 ? r.output.substr(r.output.size() - 600) : r.output));
    if (::rename(tmp.c_str(), sp.image.c_str()) != 0) throw_errno("rename " + tmp);
  } catch (Error& e) {
    ::unlink(tmp.c_str());
    e.add_context("create the store image " + sp.image);
    throw;
  }
  log::info("store: created a " + std::to_string(gib) + " GiB btrfs image " + sp.image);
}

}  // namespace

StoreAction plan_store(const StoreProbe& p, StoreUse use) {
  if (p.store_btrfs) return StoreAction::Ready;
  if (p.root_btrfs) return use == StoreUse::Create ? StoreAction::MakeDirs : StoreAction::Nothing;
  if (p.image_exists) return StoreAction::Mount;
  if (use == StoreUse::Existing) return StoreAction::Nothing;
  return p.plain_sandboxes ? StoreAction::Refuse : StoreAction::CreateImage;
}

StorePaths ensure_store(const Context& ctx, StoreUse use) {
  StorePaths sp = store_paths(ctx.root);
  if (use == StoreUse::Existing && !fs::is_dir(sp.root)) return sp;
  fs::ensure_private_dir(sp.root, 0755);  // ours, and no one else writes there
  if (btrfs::on_btrfs(sp.sandboxes)) {
    harden_mount(sp);
    return sp;
  }
  try {
    Fd lock(::open(sp.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!lock) throw_errno("open " + sp.root);
    while (::flock(lock.get(), LOCK_EX) != 0)
      if (errno != EINTR) throw_errno("lock " + sp.root);
    StoreProbe p = probe(sp);
    switch (plan_store(p, use)) {
      case StoreAction::Ready:
      case StoreAction::Nothing:
        return sp;
      case StoreAction::MakeDirs:
        make_dirs(sp);
        return sp;
      case StoreAction::Mount:
        mount_store(sp);
        break;
      case StoreAction::CreateImage:
        create_image(sp, load_host_config(ctx.root).store_size_gib);
        mount_store(sp);
        break;
      case StoreAction::Refuse:
        fail(sp.sandboxes +
                 " holds sandboxes made before the btrfs store; mounting the store "
                 "image on " +
                 sp.dir + " would hide them",
             "destroy them first ('space list' shows them), then run this command again");
    }
    make_dirs(sp);
    return sp;
  } catch (Error& e) {
    e.add_context("set up the store");
    throw;
  }
}

std::string store_kind(bool root_btrfs, bool store_btrfs, bool store_is_mount) {
  if (store_btrfs) return store_is_mount ? "loopback" : "btrfs-root";
  return root_btrfs ? "btrfs-root" : "loopback";
}

StoreStatus store_status(const Context& ctx, uint32_t size_gib) {
  StorePaths sp = store_paths(ctx.root);
  StoreStatus s;
  s.dir = sp.dir;
  s.image = sp.image;
  s.size_gib = size_gib;
  bool store_btrfs = btrfs::on_btrfs(sp.dir);
  bool mount = store_btrfs && is_mount_point(sp.dir);
  s.kind = store_kind(nearest_on_btrfs(sp.root), store_btrfs, mount);
  s.ready = store_btrfs;
  if (s.kind == "loopback") {
    struct stat st {};
    s.image_exists = ::stat(sp.image.c_str(), &st) == 0;
    s.image_bytes = s.image_exists ? uint64_t(st.st_size) : 0;
    s.image_used = s.image_exists ? uint64_t(st.st_blocks) * 512 : 0;
    s.mounted = mount;
  }
  struct statvfs vf {};
  if (s.ready && ::statvfs(sp.dir.c_str(), &vf) == 0) {
    s.fs_bytes = uint64_t(vf.f_blocks) * vf.f_frsize;
    s.fs_free = uint64_t(vf.f_bavail) * vf.f_frsize;
  }
  s.quotas = s.ready && btrfs::quota_enabled(sp.dir);
  return s;
}

json::Value store_status_json(const StoreStatus& s) {
  json::Value v = json::Object{{"kind", s.kind}, {"path", s.dir}, {"ready", s.ready}};
  if (s.kind == "loopback") {
    v.set("image", s.image);
    v.set("image_exists", s.image_exists);
    v.set("mounted", s.mounted);
    v.set("image_bytes", s.image_bytes);
    v.set("image_used_bytes", s.image_used);
    v.set("size_gib", s.size_gib);
  }
  v.set("size_bytes", s.fs_bytes);
  v.set("free_bytes", s.fs_free);
  v.set("quotas", s.quotas);
  return v;
}

std::string store_status_text(const StoreStatus& s) {
  std::string free =
      s.ready ? ", " + human_size(s.fs_free) + " free of " + human_size(s.fs_bytes) : "";
  if (s.quotas)
    free += "; quotas on (each create pays btrfs's accounting: space-create(1), --disk-size)";
  if (s.kind == "btrfs-root")
    return s.dir + " on the root's btrfs" + (s.ready ? free : " (made on first use)");
  if (!s.image_exists)
    return "loopback image " + s.image + ", not created yet (" + std::to_string(s.size_gib) +
           " GiB sparse, made on first use)";
  std::string img = "loopback image " + s.image + " (" + human_size(s.image_bytes) + ", " +
                    human_size(s.image_used) + " on disk)";
  if (!s.mounted) return img + ", not mounted (mounted on next use)";
  return img + ", mounted on " + s.dir + free;
}

std::string human_size(uint64_t bytes) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = double(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    u++;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

void remove_store_tree(const std::string& path) {
  if (btrfs::is_subvolume(path)) {
    try {
      btrfs::delete_subvolume(path);
      return;
    } catch (const Error& e) {
      // Without CAP_SYS_ADMIN (and no user_subvol_rm_allowed) only an emptied subvolume can go,
      // by rmdir: remove_tree does that.
      if (e.err() != EPERM) throw;
    }
  }
  fs::remove_tree(path);
}

void clone_into_subvolume(const std::string& src, const std::string& dst,
                          const std::function<bool(const std::string&)>& skip) {
  struct stat st {};
  if (::stat(src.c_str(), &st) != 0) throw_errno("stat " + src);
  btrfs::create_subvolume(dst, st.st_mode & 07777);
  try {
    fs::copy_tree(src, dst, skip);
  } catch (...) {
    remove_store_tree(dst);
    throw;
  }
}

}  // namespace space::store
