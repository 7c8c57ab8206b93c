// The jail's root; see root.h. Two ways to it. From the jails' base mount namespace (a VMM or
// its jail's PID 1, given its descriptor): a detached clone of the directory's mount is made
// read-only, the process joins the base and unshares a private copy of it (one empty tmpfs), mounts
// the clone over that root and chroots into it; nothing is unmounted, so nothing waits for an RCU
// grace period. By pivot_root (without a base: tests, or a kernel before 5.12): pivot_root(".",
// ".") stacks the old root on the new one at the working directory, so the umount2(".") that
// follows removes exactly the old root (with all its submounts, lazily). Either way descriptors
// opened before stay usable, which is why a jailed process must hold no descriptor of a host
// directory: ".." from one climbs to the host's root.
#include "jail/root.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"

namespace space::jail {

bool in_own_pid_namespace() {
  // /proc/self names us by our pid in /proc's namespace (still the host's when this is asked),
  // getpid() by ours: they differ only when ours is not /proc's (one readlink)...
  char self[32];
  ssize_t n = ::readlink("/proc/self", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    return std::to_string(::getpid()) != self;
  }
  // ... or our PID namespace is not the one of /proc's PID 1 (two stats)...
  struct stat own {
  }, first{};
  if (::stat("/proc/self/ns/pid", &own) == 0 && ::stat("/proc/1/ns/pid", &first) == 0)
    return own.st_dev != first.st_dev || own.st_ino != first.st_ino;
  // ... or, where that cannot be read, NSpid lists our pid in more than one namespace, from
  // /proc's down to ours.
  std::string status;
  try {
    status = fs::read_file("/proc/self/status", 64 * 1024);
  } catch (const Error&) {
    return false;
  }
  size_t at = status.find("\nNSpid:");
  if (at == std::string::npos) return false;
  std::istringstream line(status.substr(at + 7, status.find('\n', at + 1) - at - 7));
  size_t fields = 0;
  for (std::string pid; line >> pid;) fields++;
  return fields > 1;
}

namespace {

void mark(PhaseLog* phases, const char* name) {
  if (phases) phases->mark(name);
}

// Makes `dir` the root from the jails' base mount namespace (jail/mount_base.h): a clone of its
// mount, read-only, is taken while the host's tree is still ours, then mounted over the root of a
// private copy of the base, and entered with chroot. Nothing is unmounted. False, with nothing
// changed, on a kernel without the calls (open_tree and mount_setattr: Linux 5.12).
bool root_from_base(const std::string& dir, int mount_base, int unshare_flags, PhaseLog* phases) {
  Fd tree(::open_tree(AT_FDCWD, dir.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
  if (!tree && errno == ENOSYS) return false;
  if (!tree) throw_errno("jail: clone a mount of " + dir);
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
    if (errno == ENOSYS) return false;
    throw_errno("jail: make the mount of " + dir + " read-only");
  }
  mark(phases, "jail: clone");
  if (::setns(mount_base, CLONE_NEWNS) != 0)
    throw_errno("jail: join the jails' base mount namespace");
  if (::unshare(unshare_flags) != 0)
    throw_errno("jail: unshare the mount, network, IPC and UTS namespaces");
  mark(phases, "jail: unshare");
  if (::move_mount(tree.get(), "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) != 0)
    throw_errno("jail: mount " + dir + " as the root");
  if (::fchdir(tree.get()) != 0) throw_errno("jail: chdir " + dir);
  if (::chroot(".") != 0) throw_errno("jail: chroot " + dir);
  mark(phases, "jail: root");
  return true;
}

// Makes `dir` the root by pivot_root from a private copy of the host's namespace, whose old root
// is then detached (which waits for an RCU grace period).
void root_by_pivot(const std::string& dir, int unshare_flags, PhaseLog* phases) {
  if (::unshare(unshare_flags) != 0)
    throw_errno("jail: unshare the mount, network, IPC and UTS namespaces");
  mark(phases, "jail: unshare");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    throw_errno("jail: make the mounts private");
  // `dir` becomes a mount of its own (a bind of itself, without what is mounted below it), so
  // that it can be the root: ".." at a root stays there.
  if (::mount(dir.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) != 0)
    throw_errno("jail: bind " + dir + " onto itself");
  if (::chdir(dir.c_str()) != 0) throw_errno("jail: chdir " + dir);
  if (::syscall(SYS_pivot_root, ".", ".") != 0) throw_errno("jail: pivot_root");
  if (::umount2(".", MNT_DETACH) != 0) throw_errno("jail: detach the old root");
  mark(phases, "jail: root");
  if (::chdir("/") != 0) throw_errno("jail: chdir /");
  if (::mount(nullptr, "/", nullptr,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
    throw_errno("jail: remount the root read-only");
}

}  // namespace

void enter(const std::string& dir, const std::string& hostname, int network, PhaseLog* phases,
           int mount_base) {
  if (!in_own_pid_namespace())
    fail("jail: not in a PID namespace of its own; refusing to change mounts",
         "jailed VMMs are started by space create, resume, branch and template build");
  mark(phases, "jail: pid check");
  if (network >= 0 && ::setns(network, CLONE_NEWNET) != 0)
    throw_errno("jail: join the jails' network namespace");
  mark(phases, "jail: network");
  const int flags =
      CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | (network == kNewNetwork ? CLONE_NEWNET : 0);
  if (mount_base < 0 || !root_from_base(dir, mount_base, flags, phases))
    root_by_pivot(dir, flags, phases);
  std::string name = hostname.substr(0, std::min<size_t>(hostname.size(), 64));
  if (::sethostname(name.data(), name.size()) != 0) throw_errno("jail: sethostname");
}

}  // namespace space::jail
