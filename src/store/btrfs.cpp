// Subvolume operations; see btrfs.h. libbtrfsutil reports an enum and leaves errno from the
// failing system call, so both go into the message and the errno is kept for callers to branch on.
#include "store/btrfs.h"

#include <btrfsutil.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/error.h"
#include "util/fd.h"

namespace space::store::btrfs {

namespace {

[[noreturn]] void raise(const std::string& what, btrfs_util_error e) {
  int err = errno;
  std::string why = btrfs_util_strerror(e);
  if (err != 0) why += " (" + std::string(std::strerror(err)) + ")";
  throw Error(what + ": " + why, err);
}

}  // namespace

bool is_btrfs_magic(long f_type) {
  return static_cast<unsigned long>(f_type) == static_cast<unsigned long>(BTRFS_SUPER_MAGIC);
}

bool on_btrfs(const std::string& path) {
  struct statfs sf {};
  return ::statfs(path.c_str(), &sf) == 0 && is_btrfs_magic(sf.f_type);
}

bool is_subvolume(const std::string& path) {
  return btrfs_util_is_subvolume(path.c_str()) == BTRFS_UTIL_OK;
}

void create_subvolume(const std::string& path, mode_t mode) {
  errno = 0;
  if (auto e = btrfs_util_create_subvolume(path.c_str(), 0, nullptr, nullptr))
    raise("create subvolume " + path, e);
  if (::chmod(path.c_str(), mode) != 0) throw_errno("chmod " + path);
}

void snapshot(const std::string& source, const std::string& dest) {
  errno = 0;
  if (auto e = btrfs_util_create_snapshot(source.c_str(), dest.c_str(), 0, nullptr, nullptr))
    raise("snapshot " + source + " to " + dest, e);
}

void delete_subvolume(const std::string& path) {
  errno = 0;
  if (auto e = btrfs_util_delete_subvolume(path.c_str(), 0)) raise("delete subvolume " + path, e);
}

void set_read_only(const std::string& path, bool read_only) {
  errno = 0;
  if (auto e = btrfs_util_set_subvolume_read_only(path.c_str(), read_only))
    raise(std::string(read_only ? "make" : "unmake") + " read-only subvolume " + path, e);
}

void enable_quota(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("open " + path);
  btrfs_ioctl_quota_ctl_args a{};
  a.cmd = BTRFS_QUOTA_CTL_ENABLE;
  if (::ioctl(fd.get(), BTRFS_IOC_QUOTA_CTL, &a) != 0)
    throw_errno("enable btrfs quotas on " + path);
}

bool quota_enabled(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  btrfs_ioctl_fs_info_args info{};
  if (!fd || ::ioctl(fd.get(), BTRFS_IOC_FS_INFO, &info) != 0) return false;
  char uuid[37];
  const uint8_t* u = info.fsid;
  std::snprintf(uuid, sizeof uuid,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
                u[15]);
  struct stat st {};
  return ::stat((std::string("/sys/fs/btrfs/") + uuid + "/qgroups").c_str(), &st) == 0 &&
         S_ISDIR(st.st_mode);
}

void limit_exclusive(const std::string& path, uint64_t bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("open " + path);
  btrfs_ioctl_qgroup_limit_args a{};
  a.qgroupid = 0;  // the subvolume `fd` is in
  a.lim.flags = BTRFS_QGROUP_LIMIT_MAX_EXCL;
  a.lim.max_excl = bytes ? bytes : ~uint64_t{0};
  if (::ioctl(fd.get(), BTRFS_IOC_QGROUP_LIMIT, &a) != 0)
    throw_errno("limit the btrfs qgroup of " + path);
}

}  // namespace space::store::btrfs
