// Boot steps: a fixed mount table, one read of /proc/cmdline, sethostname, setenv and one ioctl.
#include "boot.h"

#include <fcntl.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cmdline.h"
#include "util/fd.h"

namespace space::guest {
namespace {

struct MountSpec {
  const char* source;
  const char* target;
  const char* type;
  unsigned long flags;
  const char* data;
  mode_t mkdir_mode;  // non-zero: create the mount point first (it lives on a fresh devtmpfs)
};

constexpr unsigned long kNoSuidDevExec = MS_NOSUID | MS_NODEV | MS_NOEXEC;

constexpr MountSpec kMounts[] = {
    {"proc", "/proc", "proc", kNoSuidDevExec, nullptr, 0},
    {"sysfs", "/sys", "sysfs", kNoSuidDevExec, nullptr, 0},
    {"devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755", 0},
    {"devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
     "newinstance,ptmxmode=0666,mode=0620,gid=5", 0755},
    {"tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", 01777},
    {"tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", 0},
    {"tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755", 0},
};

void log_errno(const Console& con, const std::string& what, int err) {
  con.log(what + ": " + std::strerror(err));
}

}  // namespace

void mount_api_filesystems(const Console& con) {
  for (const auto& m : kMounts) {
    if (m.mkdir_mode && ::mkdir(m.target, m.mkdir_mode) != 0 && errno != EEXIST)
      log_errno(con, std::string("mkdir ") + m.target, errno);
    if (::mount(m.source, m.target, m.type, m.flags, m.data) != 0 && errno != EBUSY)
      log_errno(con, std::string("mount ") + m.type + " on " + m.target, errno);
  }
  // devtmpfs normally has a ptmx node already; the symlink covers kernels where it does not.
  if (::symlink("pts/ptmx", "/dev/ptmx") != 0 && errno != EEXIST)
    log_errno(con, "symlink /dev/ptmx", errno);
}

void ensure_stdio() {
  if (::fcntl(2, F_GETFD) >= 0) return;
  int fd = ::open("/dev/console", O_RDWR | O_NOCTTY);
  if (fd < 0) return;
  for (int i = 0; i < 3; i++)
    if (fd != i) ::dup2(fd, i);
  if (fd > 2) {
    Fd owned(fd);  // closes the spare descriptor
  }
}

std::string set_hostname_from_cmdline(const Console& con) {
  std::string cmdline;
  {
    Fd fd(::open("/proc/cmdline", O_RDONLY | O_CLOEXEC));
    if (!fd) {
      log_errno(con, "open /proc/cmdline", errno);
    } else {
      char buf[4096];
      ssize_t n;
      while ((n = ::read(fd.get(), buf, sizeof buf)) > 0)
        cmdline.append(buf, static_cast<size_t>(n));
    }
  }
  std::string warning;
  std::string name = hostname_from_cmdline(cmdline, &warning);
  if (!warning.empty()) con.log(warning);
  if (::sethostname(name.data(), name.size()) != 0) log_errno(con, "sethostname " + name, errno);
  return name;
}

void set_child_env() {
  ::setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
  ::setenv("HOME", "/root", 1);
  ::setenv("SHELL", "/bin/sh", 1);
}

void bring_up_loopback() {
  Fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s) return;  // no IPv4 in this kernel
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  // Only IFF_UP is changeable here; the kernel keeps lo's other flags.
  ifr.ifr_flags = IFF_UP;
  ::ioctl(s.get(), SIOCSIFFLAGS, &ifr);
}

}  // namespace space::guest
