// The jails' base mount namespace; see mount_base.h. It is kept as jail/ns_file.h keeps one: a
// forked child unshares a mount namespace, pivots into an empty tmpfs, detaches everything else
// (the one grace period, paid once per boot) and holds it while we bind-mount its /proc/PID/ns/mnt
// onto the path.
#include "jail/mount_base.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "jail/ns_file.h"
#include "util/error.h"
#include "util/fs.h"

namespace space::jail {
namespace {

// Makes `dir` a private mount: a bind of itself first if it is not the root of a mount.
void make_private_mount(const std::string& dir) {
  struct statx stx {};
  if (::statx(AT_FDCWD, dir.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) != 0)
    throw_errno("statx " + dir);
  const bool mount_root = (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
                          (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
  if (!mount_root && ::mount(dir.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) != 0)
    throw_errno("bind " + dir + " onto itself");
  if (::mount(nullptr, dir.c_str(), nullptr, MS_PRIVATE, nullptr) != 0)
    throw_errno("make " + dir + " a private mount");
}

}  // namespace

Fd shared_mount_base(const std::string& dir) {
  static const NamespaceKind kind{CLONE_NEWNS, "mnt", "mount", "the jails' base mount namespace"};
  const char* top = dir.c_str();
  return kept_namespace(
      dir + "/ns", dir + ".lock", kind,
      [&dir] {
        fs::ensure_private_dir(dir, 0700);
        make_private_mount(dir);
      },
      // In a copy of our namespace, private, so that nothing here reaches the host: an empty tmpfs
      // over `dir` (which exists in the copy too) becomes the root, the rest is detached, and the
      // root is made read-only.
      [top] {
        bool ok = ::unshare(CLONE_NEWNS) == 0 &&
                  ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
                  ::mount("space-jail-base", top, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                          "size=4k,nr_inodes=16,mode=0555") == 0 &&
                  ::chdir(top) == 0 && ::syscall(SYS_pivot_root, ".", ".") == 0 &&
                  ::umount2(".", MNT_DETACH) == 0 && ::chdir("/") == 0 &&
                  ::mount(nullptr, "/", nullptr,
                          MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                          nullptr) == 0;
        return ok ? 0 : errno;
      });
}

}  // namespace space::jail
