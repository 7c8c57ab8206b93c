// The jails' base mount namespace; see mount_base.h. It is made by a forked child that unshares a
// mount namespace, pivots into an empty tmpfs, detaches everything else (the one grace period,
// paid once per boot) and waits while we bind-mount its /proc/PID/ns/mnt onto the path.
#include "jail/mount_base.h"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"

namespace space::jail {
namespace {

bool same_file(int a, int b) {
  struct stat sa {
  }, sb{};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// The namespace mounted at `path`, if a mount namespace is; an invalid Fd otherwise.
Fd open_mounted(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT) return Fd();
    throw_errno("open " + path);
  }
  if (is_mount_namespace(fd.get())) return fd;
  return Fd();
}

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

// Makes a new base namespace and bind-mounts it onto `path` (an existing file in `dir`, a private
// mount). The child makes only system calls.
void make(const std::string& dir, const std::string& path) {
  Pipe to_child = Pipe::make(), to_parent = Pipe::make();
  const char* top = dir.c_str();
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {
    to_child.write.reset();  // or the read below would never see EOF
    to_parent.read.reset();
    // In a copy of our namespace, private, so that nothing here reaches the host: an empty tmpfs
    // over `dir` (which exists in the copy too) becomes the root, the rest is detached, and the
    // root is made read-only.
    bool ok =
        ::unshare(CLONE_NEWNS) == 0 &&
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
        ::mount("space-jail-base", top, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "size=4k,nr_inodes=16,mode=0555") == 0 &&
        ::chdir(top) == 0 && ::syscall(SYS_pivot_root, ".", ".") == 0 &&
        ::umount2(".", MNT_DETACH) == 0 && ::chdir("/") == 0 &&
        ::mount(nullptr, "/", nullptr,
                MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0;
    char c = ok ? 'y' : 'n';
    int err = errno;
    if (::write(to_parent.write.get(), &c, 1) != 1) ::_exit(1);
    if (!ok && ::write(to_parent.write.get(), &err, sizeof err) != sizeof err) ::_exit(1);
    ssize_t n;
    do n = ::read(to_child.read.get(), &c, 1);  // hold it until the parent mounted it (or gave up)
    while (n < 0 && errno == EINTR);
    ::_exit(0);
  }
  proc::Child child(pid);  // killed and reaped whatever happens
  to_parent.write.reset();
  to_child.read.reset();
  char c = 0;
  int child_err = 0;
  ssize_t n;
  do n = ::read(to_parent.read.get(), &c, 1);
  while (n < 0 && errno == EINTR);
  if (c != 'y') (void)!::read(to_parent.read.get(), &child_err, sizeof child_err);
  int err = 0;
  if (c == 'y' && ::mount(("/proc/" + std::to_string(pid) + "/ns/mnt").c_str(), path.c_str(),
                          nullptr, MS_BIND, nullptr) != 0)
    err = errno;
  to_child.write.reset();  // EOF: the child exits; the mount keeps the namespace
  child.wait();
  if (c != 'y')
    throw Error("make the jails' base mount namespace: " +
                    std::string(child_err ? std::strerror(child_err) : "its maker failed"),
                child_err ? child_err : EPERM, "jailing needs root (CAP_SYS_ADMIN)");
  if (err)
    throw Error("mount the jails' base mount namespace at " + path + ": " + std::strerror(err), err,
                "jailing needs root (CAP_SYS_ADMIN)");
  log::info("made the jails' base mount namespace at " + path);
}

}  // namespace

bool is_mount_namespace(int fd) {
  return ::ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNS;
}

Fd shared_mount_base(const std::string& dir) {
  const std::string path = dir + "/ns";
  Fd fd = open_mounted(path);
  if (!fd) {
    fs::ensure_private_dir(dir, 0700);
    Fd lock(::open((dir + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!lock) throw_errno("open " + dir + ".lock");
    while (::flock(lock.get(), LOCK_EX) != 0)
      if (errno != EINTR) throw_errno("lock " + dir + ".lock");
    fd = open_mounted(path);  // made meanwhile by another
    if (!fd) {
      make_private_mount(dir);
      Fd file(::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0400));
      if (!file) throw_errno("create " + path);
      struct stat st {};
      if (::fstat(file.get(), &st) != 0) throw_errno("stat " + path);
      if (!S_ISREG(st.st_mode)) fail(path + " is not a regular file", "remove it");
      file.reset();
      make(dir, path);
      fd = open_mounted(path);
      if (!fd) fail("the jails' base mount namespace at " + path + " did not mount");
    }
  }
  Fd own(::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC));
  if (own && same_file(fd.get(), own.get()))
    fail(path + " holds this host's own mount namespace, not the jails' base",
         "umount " + path + " (space makes a new one there)");
  return fd;
}

}  // namespace space::jail
