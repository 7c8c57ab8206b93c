// Namespaces kept by a bind mount of their nsfs file; see ns_file.h.
#include "jail/ns_file.h"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"
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

// The namespace of `type` mounted at `path`; an invalid Fd if there is none.
Fd open_mounted(const std::string& path, int type) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT) return Fd();
    throw_errno("open " + path);
  }
  if (is_namespace(fd.get(), type)) return fd;
  return Fd();
}

// Has a forked child make the namespace with `setup` and hold it until its nsfs file is
// bind-mounted onto `path`.
void make(const std::string& path, const NamespaceKind& kind, const std::function<int()>& setup) {
  Pipe to_child = Pipe::make(), to_parent = Pipe::make();
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {
    to_child.write.reset();  // or the read below would never see EOF
    to_parent.read.reset();
    int err = setup();
    char c = err == 0 ? 'y' : 'n';
    if (::write(to_parent.write.get(), &c, 1) != 1) ::_exit(1);
    if (err && ::write(to_parent.write.get(), &err, sizeof err) != sizeof err) ::_exit(1);
    ssize_t n = 0;
    do n = ::read(to_child.read.get(), &c, 1);  // hold it until the parent mounted it (or gave up)
    while (n < 0 && errno == EINTR);
    ::_exit(0);
  }
  proc::Child child(pid);  // killed and reaped whatever happens
  to_parent.write.reset();
  to_child.read.reset();
  char c = 0;
  int child_err = 0;
  ssize_t n = 0;
  do n = ::read(to_parent.read.get(), &c, 1);
  while (n < 0 && errno == EINTR);
  if (c != 'y') (void)!::read(to_parent.read.get(), &child_err, sizeof child_err);
  int err = 0;
  const std::string nsfs = "/proc/" + std::to_string(pid) + "/ns/" + kind.file;
  if (c == 'y' && ::mount(nsfs.c_str(), path.c_str(), nullptr, MS_BIND, nullptr) != 0) err = errno;
  to_child.write.reset();  // EOF: the child exits; the mount keeps the namespace
  child.wait();
  const char* hint = "jailing needs root (CAP_SYS_ADMIN)";
  if (c != 'y')
    throw Error(std::string("make ") + kind.what + ": " +
                    (child_err ? std::strerror(child_err) : "its maker failed"),
                child_err ? child_err : EPERM, hint);
  if (err)
    throw Error(std::string("mount ") + kind.what + " at " + path + ": " + std::strerror(err), err,
                hint);
  log::info(std::string("made ") + kind.what + " at " + path);
}

}  // namespace

bool is_namespace(int fd, int type) {
  return ::ioctl(fd, NS_GET_NSTYPE) == type;
}

Fd kept_namespace(const std::string& path, const std::string& lock, const NamespaceKind& kind,
                  const std::function<void()>& prepare, const std::function<int()>& setup) {
  Fd fd = open_mounted(path, kind.type);
  if (!fd) {
    Fd held(::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!held) throw_errno("open " + lock);
    while (::flock(held.get(), LOCK_EX) != 0)
      if (errno != EINTR) throw_errno("lock " + lock);
    fd = open_mounted(path, kind.type);  // made meanwhile by another
    if (!fd) {
      if (prepare) prepare();
      Fd file(::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0400));
      if (!file) throw_errno("create " + path);
      struct stat st {};
      if (::fstat(file.get(), &st) != 0) throw_errno("stat " + path);
      if (!S_ISREG(st.st_mode)) fail(path + " is not a regular file", "remove it");
      file.reset();
      make(path, kind, setup);
      fd = open_mounted(path, kind.type);
      if (!fd) fail(std::string(kind.what) + " at " + path + " did not mount");
    }
  }
  Fd own(::open(("/proc/self/ns/" + std::string(kind.file)).c_str(), O_RDONLY | O_CLOEXEC));
  if (own && same_file(fd.get(), own.get()))
    fail(path + " holds this host's own " + kind.name + " namespace, not " + kind.what,
         "umount " + path + " (space makes a new one there)");
  return fd;
}

}  // namespace space::jail
