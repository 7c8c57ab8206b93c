// ImageRoot: mounting the user's image and preparing it as a root; see image_root.h.
#include "image_root.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "proto/agent.h"
#include "util/open_resolved.h"

namespace space::guest {
namespace {

constexpr const char* kHostnameFile = "/run/space/hostname";
constexpr const char* kHostsFile = "/run/space/hosts";
constexpr const char* kSpaceSecret = "/usr/bin/space-secret";
constexpr int kCapacityWaitMs = 10'000;

[[noreturn]] void fail_errno(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

// openat2 of `path` inside the tree rooted at `root`: absolute names, ".." and symlinks all
// resolve within it. -1 with errno on failure.
int open_in_root(int root, const std::string& path, int flags, mode_t mode = 0) {
  return open_resolved(root, path, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, mode);
}

// The directory `path` inside `root`, made (with its missing parents, `mode`) if needed; an O_PATH
// descriptor of it. Each prefix is resolved from the root again, so a symlinked component stays
// inside the image.
Fd dir_in_root(int root, const std::string& path, mode_t mode) {
  Fd cur(::fcntl(root, F_DUPFD_CLOEXEC, 0));
  if (!cur) fail_errno("dup");
  std::string sofar;
  for (size_t pos = 0; pos <= path.size();) {
    size_t end = std::min(path.find('/', pos), path.size());
    std::string name = path.substr(pos, end - pos);
    pos = end + 1;
    if (name.empty() || name == ".") continue;
    sofar += (sofar.empty() ? "" : "/") + name;
    Fd next(open_in_root(root, sofar, O_PATH | O_DIRECTORY));
    if (!next && errno == ENOENT) {
      if (::mkdirat(cur.get(), name.c_str(), mode) != 0 && errno != EEXIST)
        fail_errno("mkdir /" + sofar + " in the image");
      next = Fd(open_in_root(root, sofar, O_PATH | O_DIRECTORY));
    }
    if (!next) fail_errno("open /" + sofar + " in the image");
    cur = std::move(next);
  }
  return cur;
}

// The regular file `path` inside `root`, created empty if missing; an O_PATH descriptor, or an
// invalid Fd (logged) if something else (a directory, a FIFO) is there.
Fd file_in_root(int root, const std::string& path, const Console& con) {
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) dir_in_root(root, path.substr(0, slash), 0755);
  Fd fd(open_in_root(root, path, O_PATH));
  if (!fd && errno == ENOENT) {
    Fd made(open_in_root(root, path, O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK, 0644));
    if (!made && errno != EEXIST) fail_errno("create " + path + " in the image");
    fd = Fd(open_in_root(root, path, O_PATH));
  }
  if (!fd) fail_errno("open " + path + " in the image");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_errno("stat " + path + " in the image");
  if (!S_ISREG(st.st_mode)) {
    con.log("image: " + path + " is not a regular file; left as it is");
    return Fd();
  }
  return fd;
}

std::string fd_path(const Fd& fd) {
  return "/proc/self/fd/" + std::to_string(fd.get());
}

void mount_on(const char* source, const Fd& target, const char* type, unsigned long flags,
              const char* data, const std::string& what) {
  if (::mount(source, fd_path(target).c_str(), type, flags, data) != 0)
    fail_errno("mount " + what + " in the image");
}

// Sectors of /dev/vdb as the guest kernel sees them.
uint64_t vdb_sectors() {
  Fd fd(::open("/sys/block/vdb/size", O_RDONLY | O_CLOEXEC));
  if (!fd) return 0;
  char buf[32] = {};
  ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  return n > 0 ? std::strtoull(buf, nullptr, 10) : 0;
}

void sleep_ms(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000L};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Replaces the contents of `path` in place (the bind mounts refer to its inode).
void rewrite(const char* path, const std::string& text) {
  Fd fd(::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) fail_errno(std::string("write ") + path);
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    fail_errno(std::string("write ") + path);
}

}  // namespace

void ImageRoot::write_identity(const std::string& hostname) {
  if (hostname == hostname_) return;
  if (::mkdir("/run/space", 0755) != 0 && errno != EEXIST) fail_errno("mkdir /run/space");
  rewrite(kHostnameFile, hostname + "\n");
  rewrite(kHostsFile, "127.0.0.1\tlocalhost\n127.0.1.1\t" + hostname + "\n");
  hostname_ = hostname;
}

void ImageRoot::mount_image(const Console& con) {
  const char* mount_point = premounted_.empty() ? kMountPoint : premounted_.c_str();
  if (premounted_.empty()) {
    if (::mkdir(kMountPoint, 0755) != 0 && errno != EEXIST)
      fail_errno(std::string("mkdir ") + kMountPoint);
    int waited = 0;
    for (int step = 1; vdb_sectors() == 0; step = std::min(step * 2, 50)) {
      if (waited >= kCapacityWaitMs)
        throw std::runtime_error(std::string(kDevice) + " has no medium after " +
                                 std::to_string(kCapacityWaitMs / 1000) + " s");
      sleep_ms(step);
      waited += step;
    }
    if (::mount(kDevice, kMountPoint, "ext4", MS_NOATIME, "noinit_itable") != 0)
      fail_errno(std::string("mount ") + kDevice + " (ext4)");
  }
  try {
    Fd root(::open(mount_point, O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root) fail_errno(std::string("open ") + mount_point);
    const int r = root.get();
    Fd proc = dir_in_root(r, "proc", 0555);
    mount_on("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr, "/proc");
    Fd sys = dir_in_root(r, "sys", 0555);
    mount_on("sysfs", sys, "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr, "/sys");
    Fd dev = dir_in_root(r, "dev", 0755);
    mount_on("/dev", dev, nullptr, MS_BIND | MS_REC, nullptr, "/dev");
    // Under gVisor the host's sockets (secrets, the proxy's way out) are files in a directory
    // the sandbox was given: the image's processes need it too (space-secret dials there).
    if (!premounted_.empty() && ::access(proto::kGvisorHostDir, F_OK) == 0) {
      Fd host = dir_in_root(r, std::string(proto::kGvisorHostDir).substr(1), 0755);
      mount_on(proto::kGvisorHostDir, host, nullptr, MS_BIND, nullptr, proto::kGvisorHostDir);
    }
    Fd tmp = dir_in_root(r, "tmp", 01777);
    if (::fchmodat(AT_FDCWD, fd_path(tmp).c_str(), 01777, 0) != 0)
      con.log(std::string("image: chmod /tmp: ") + std::strerror(errno));
    // Conveniences: an image whose /etc/hosts is, say, a dangling symlink still works without.
    for (auto [inside, from] :
         {std::pair{"etc/hostname", kHostnameFile}, std::pair{"etc/hosts", kHostsFile},
          std::pair{"usr/local/bin/space-secret", kSpaceSecret}}) {
      try {
        Fd target = file_in_root(r, inside, con);
        if (target) mount_on(from, target, nullptr, MS_BIND, nullptr, std::string("/") + inside);
      } catch (const std::exception& e) {
        con.log(std::string("image: ") + e.what());
      }
    }
    root_ = std::move(root);
  } catch (...) {
    if (premounted_.empty()) ::umount2(kMountPoint, MNT_DETACH);
    throw;
  }
}

void ImageRoot::ensure(const Console& con, const std::string& hostname) noexcept {
  std::lock_guard lock(mu_);
  try {
    write_identity(hostname);
    if (root_) return;
    struct timespec t0 {};
    ::clock_gettime(CLOCK_MONOTONIC, &t0);
    mount_image(con);
    struct timespec t1 {};
    ::clock_gettime(CLOCK_MONOTONIC, &t1);
    error_.clear();
    con.log("image mounted in " +
            std::to_string((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000) +
            " ms");
  } catch (const std::exception& e) {
    error_ = std::string("the sandbox's image cannot be used: ") + e.what();
    con.log(error_);
  }
}

int ImageRoot::root_fd() const {
  std::lock_guard lock(mu_);
  return root_.get();
}

std::string ImageRoot::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

}  // namespace space::guest
