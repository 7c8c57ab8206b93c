// The jail's root; see root.h. pivot_root(".", ".") stacks the old root on the new one at the
// working directory, so the umount2(".") that follows removes exactly the old root (with all its
// submounts, lazily: descriptors into it stay usable).
#include "jail/root.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "util/error.h"

namespace space::jail {

void enter(const std::string& mount_point, const std::string& hostname) {
  if (::getpid() != 1)
    fail("jail: not PID 1 of a PID namespace of its own; refusing to change mounts",
         "jailed VMMs are started by space create, resume, branch and template build");
  if (::unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) != 0)
    throw_errno("jail: unshare the mount, network, IPC and UTS namespaces");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    throw_errno("jail: make the mounts private");
  if (::mount("space-jail", mount_point.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=4k,nr_inodes=4,mode=0555") != 0)
    throw_errno("jail: mount the jail's tmpfs on " + mount_point);
  if (::chdir(mount_point.c_str()) != 0) throw_errno("jail: chdir " + mount_point);
  if (::syscall(SYS_pivot_root, ".", ".") != 0) throw_errno("jail: pivot_root");
  if (::umount2(".", MNT_DETACH) != 0) throw_errno("jail: detach the old root");
  if (::chdir("/") != 0) throw_errno("jail: chdir /");
  if (::mount(nullptr, "/", nullptr,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
    throw_errno("jail: remount the root read-only");
  std::string name = hostname.substr(0, std::min<size_t>(hostname.size(), 64));
  if (::sethostname(name.data(), name.size()) != 0) throw_errno("jail: sethostname");
}

}  // namespace space::jail
