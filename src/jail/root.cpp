// The jail's root; see root.h. pivot_root(".", ".") stacks the old root on the new one at the
// working directory, so the umount2(".") that follows removes exactly the old root (with all its
// submounts, lazily: descriptors into it stay usable, which is why a jailed process must hold no
// descriptor of a host directory: ".." from one climbs to the host's root).
#include "jail/root.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "util/error.h"
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

void enter(const std::string& dir, const std::string& hostname, int network, PhaseLog* phases) {
  auto mark = [phases](const char* name) {
    if (phases) phases->mark(name);
  };
  if (!in_own_pid_namespace())
    fail("jail: not in a PID namespace of its own; refusing to change mounts",
         "jailed VMMs are started by space create, resume, branch and template build");
  mark("jail: pid check");
  if (network >= 0 && ::setns(network, CLONE_NEWNET) != 0)
    throw_errno("jail: join the jails' network namespace");
  mark("jail: network");
  if (::unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS |
                (network == kNewNetwork ? CLONE_NEWNET : 0)) != 0)
    throw_errno("jail: unshare the mount, network, IPC and UTS namespaces");
  mark("jail: unshare");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    throw_errno("jail: make the mounts private");
  // `dir` becomes a mount of its own (a bind of itself, without what is mounted below it), so
  // that it can be the root: ".." at a root stays there.
  if (::mount(dir.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) != 0)
    throw_errno("jail: bind " + dir + " onto itself");
  if (::chdir(dir.c_str()) != 0) throw_errno("jail: chdir " + dir);
  if (::syscall(SYS_pivot_root, ".", ".") != 0) throw_errno("jail: pivot_root");
  if (::umount2(".", MNT_DETACH) != 0) throw_errno("jail: detach the old root");
  mark("jail: root");
  if (::chdir("/") != 0) throw_errno("jail: chdir /");
  if (::mount(nullptr, "/", nullptr,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
    throw_errno("jail: remount the root read-only");
  std::string name = hostname.substr(0, std::min<size_t>(hostname.size(), 64));
  if (::sethostname(name.data(), name.size()) != 0) throw_errno("jail: sethostname");
}

}  // namespace space::jail
