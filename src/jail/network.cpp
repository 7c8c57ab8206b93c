// The jails' shared network namespace; see network.h. It is made by a forked child that unshares
// a new network namespace and waits while we bind-mount its /proc/PID/ns/net onto the path.
#include "jail/network.h"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <signal.h>
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

// The namespace mounted at `path`, if a network namespace is; an invalid Fd otherwise.
Fd open_mounted(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT) return Fd();
    throw_errno("open " + path);
  }
  if (is_network_namespace(fd.get())) return fd;
  return Fd();
}

// Makes a new network namespace and bind-mounts it onto `path` (an existing file).
void make(const std::string& path) {
  int to_child[2], to_parent[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) throw_errno("pipe2");
  Fd child_rd(to_child[0]), parent_wr(to_child[1]);
  if (::pipe2(to_parent, O_CLOEXEC) != 0) throw_errno("pipe2");
  Fd parent_rd(to_parent[0]), child_wr(to_parent[1]);
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {
    parent_wr.reset();  // or the read below would never see EOF
    parent_rd.reset();
    char c = ::unshare(CLONE_NEWNET) == 0 ? 'y' : 'n';
    if (::write(child_wr.get(), &c, 1) != 1) ::_exit(1);
    ssize_t n;
    do n = ::read(child_rd.get(), &c, 1);  // hold it until the parent mounted it (or gave up)
    while (n < 0 && errno == EINTR);
    ::_exit(0);
  }
  proc::Child child(pid);  // killed and reaped whatever happens
  child_wr.reset();
  child_rd.reset();
  char c = 0;
  ssize_t n;
  do n = ::read(parent_rd.get(), &c, 1);
  while (n < 0 && errno == EINTR);
  int err = 0;
  if (c != 'y') {
    err = EPERM;
  } else if (::mount(("/proc/" + std::to_string(pid) + "/ns/net").c_str(), path.c_str(), nullptr,
                     MS_BIND, nullptr) != 0) {
    err = errno;
  }
  parent_wr.reset();  // EOF: the child exits; the mount keeps the namespace
  child.wait();
  if (err)
    throw Error("make the jails' network namespace at " + path + ": " +
                    (c != 'y' ? std::string("unshare failed") : std::string(std::strerror(err))),
                err, "jailing needs root (CAP_SYS_ADMIN)");
  log::info("made the jails' shared network namespace at " + path);
}

}  // namespace

bool is_network_namespace(int fd) {
  return ::ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET;
}

Fd shared_network(const std::string& path) {
  Fd fd = open_mounted(path);
  if (!fd) {
    Fd lock(::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!lock) throw_errno("open " + path + ".lock");
    while (::flock(lock.get(), LOCK_EX) != 0)
      if (errno != EINTR) throw_errno("lock " + path + ".lock");
    fd = open_mounted(path);  // made meanwhile by another
    if (!fd) {
      Fd file(::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0400));
      if (!file) throw_errno("create " + path);
      struct stat st {};
      if (::fstat(file.get(), &st) != 0) throw_errno("stat " + path);
      if (!S_ISREG(st.st_mode)) fail(path + " is not a regular file", "remove it");
      file.reset();
      make(path);
      fd = open_mounted(path);
      if (!fd) fail("the jails' network namespace at " + path + " did not mount");
    }
  }
  Fd own(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  if (own && same_file(fd.get(), own.get()))
    fail(path + " holds this host's own network namespace, not an empty one",
         "umount " + path + " (space makes a new one there)");
  return fd;
}

}  // namespace space::jail
