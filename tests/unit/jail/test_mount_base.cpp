// Unit tests for jail/mount_base: shared_mount_base() makes one base mount namespace under a
// directory (kept by a bind mount in a private mount of that directory, which outlives its
// maker), whose only mount is an empty, read-only root; hands the same one to every later
// caller, and to concurrent ones; mounts one over a plain file a reboot left, without binding the
// directory twice. Root only (they mount); every mount is undone when a test ends.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "jail/mount_base.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"

using namespace space;

namespace {

ino_t inode_of(int fd) {
  struct stat st {};
  REQUIRE(::fstat(fd, &st) == 0);
  return st.st_ino;
}

ino_t own_mount_namespace() {
  Fd own(::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC));
  REQUIRE(own);
  return inode_of(own.get());
}

// The lines of our mountinfo whose mount point is `path`.
std::vector<std::string> mounts_at(const std::string& path) {
  std::string mi = fs::read_file("/proc/self/mountinfo", 1u << 20);
  std::vector<std::string> out;
  size_t start = 0;
  while (start < mi.size()) {
    size_t end = mi.find('\n', start);
    std::string line = mi.substr(start, end - start);
    if (line.find(" " + path + " ") != std::string::npos) out.push_back(line);
    start = end == std::string::npos ? mi.size() : end + 1;
  }
  return out;
}

// A directory for the base, whose mounts are undone (all of them) at the end.
struct BaseDir {
  test::TempDir dir{"mntbase"};
  std::string path = dir.path + "/mnt";
  ~BaseDir() {
    while (::umount2((path + "/ns").c_str(), MNT_DETACH) == 0) {
    }
    while (::umount2(path.c_str(), MNT_DETACH) == 0) {
    }
  }
};

// What a child that joins `base` finds at its root: the names there ("" if none), then "ro" if
// it is read-only and "rofs" if creating a file fails with EROFS; or "error".
std::string root_of(int base) {
  Pipe out = Pipe::make();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::string s;
    if (::setns(base, CLONE_NEWNS) != 0) {
      s = "error";
    } else {
      for (const std::string& n : fs::list_dir("/")) s += n + ",";
      struct statvfs v {};
      if (::statvfs("/", &v) == 0 && (v.f_flag & ST_RDONLY)) s += "ro";
      if (::open("/x", O_WRONLY | O_CREAT | O_CLOEXEC, 0600) < 0 && errno == EROFS) s += " rofs";
    }
    (void)!::write(out.write.get(), s.data(), s.size());
    ::_exit(0);
  }
  out.write.reset();
  std::string s;
  char buf[256];
  ssize_t n;
  while ((n = ::read(out.read.get(), buf, sizeof buf)) > 0) s.append(buf, size_t(n));
  ::waitpid(pid, nullptr, 0);
  return s;
}

}  // namespace

TEST_CASE("mount base: one empty, read-only namespace, kept in a private mount, handed out again") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: needs root");
    return;
  }
  BaseDir d;
  Fd first = jail::shared_mount_base(d.path);
  REQUIRE(first);
  CHECK(jail::is_mount_namespace(first.get()));
  CHECK(inode_of(first.get()) != own_mount_namespace());
  CHECK(mounts_at(d.path + "/ns").size() == 1);  // kept by its mount: its maker is gone
  auto dir_mounts = mounts_at(d.path);
  REQUIRE(dir_mounts.size() == 1);
  CHECK(dir_mounts[0].find("shared:") == std::string::npos);  // private: nothing propagates
  CHECK(root_of(first.get()) == "ro rofs");                   // nothing in it, read-only
  Fd again = jail::shared_mount_base(d.path);
  CHECK(inode_of(again.get()) == inode_of(first.get()));
  CHECK(mounts_at(d.path + "/ns").size() == 1);
  CHECK(mounts_at(d.path).size() == 1);
  struct stat st {};
  REQUIRE(::stat(d.path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
}

TEST_CASE("mount base: concurrent first callers make one namespace") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: needs root");
    return;
  }
  BaseDir d;
  pid_t kids[4];
  for (pid_t& k : kids) {
    k = ::fork();
    REQUIRE(k >= 0);
    if (k == 0) {
      try {
        jail::shared_mount_base(d.path);
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
  }
  for (pid_t k : kids) {
    int st = 0;
    REQUIRE(::waitpid(k, &st, 0) == k);
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
  }
  CHECK(mounts_at(d.path + "/ns").size() == 1);
  CHECK(mounts_at(d.path).size() == 1);
}

TEST_CASE(
    "mount base: a plain file left by a reboot gets a namespace; the directory is bound once") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: needs root");
    return;
  }
  BaseDir d;
  // What a reboot leaves where /run is not a tmpfs: the directory and the file, nothing mounted;
  // here the directory is a mount already (a bind of itself), which is not made again.
  REQUIRE(::mkdir(d.path.c_str(), 0700) == 0);
  REQUIRE(::mount(d.path.c_str(), d.path.c_str(), nullptr, MS_BIND, nullptr) == 0);
  fs::write_file_atomic(d.path + "/ns", "", 0400, fs::Sync::Volatile);
  Fd fd = jail::shared_mount_base(d.path);
  CHECK(jail::is_mount_namespace(fd.get()));
  CHECK(mounts_at(d.path + "/ns").size() == 1);
  CHECK(mounts_at(d.path).size() == 1);
  Fd regular(::open(d.dir.path.c_str(), O_RDONLY | O_CLOEXEC));
  CHECK_FALSE(jail::is_mount_namespace(regular.get()));
}
