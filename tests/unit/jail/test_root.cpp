// Unit tests for jail/root: enter() refuses to run unless its caller is PID 1 (so these tests'
// own process is never touched), and, in a child cloned as PID 1 of a new PID namespace (root
// only), leaves it in a read-only root that is the directory it was given (what that holds and
// nothing else, no /proc; ".." stays there), its own hostname, mount, UTS and network namespaces
// (loopback down), and its file descriptors still usable, while the host's mounts (a shared one
// included) and hostname stay as they were.
#include <dirent.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <string>

#include "jail/mount_base.h"
#include "jail/root.h"
#include "support/mount_base_dir.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"

using namespace space;

namespace {

ino_t inode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_ino;
}

dev_t device_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_dev;
}

std::string hostname() {
  char buf[HOST_NAME_MAX + 1] = {};
  REQUIRE(::gethostname(buf, sizeof buf) == 0);
  return buf;
}

// The checks a jailed child makes after enter(`name`) into a directory made by JailDir: "" when
// all pass, else what failed. `data` is a host file opened before.
std::string check_jail(int data, const std::string& name) {
  std::string failed;
  auto check = [&](bool ok, const char* what) {
    if (!ok) failed += std::string(what) + "; ";
  };
  DIR* d = ::opendir("/");
  check(d != nullptr, "opendir /");
  if (d) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != ".." && n != "inside") failed += "/ holds " + n + "; ";
    }
    ::closedir(d);
  }
  check(::access("/inside", F_OK) == 0, "/ holds what the directory held");
  // ".." at the root stays there: nothing of the host's tree above the directory is reachable.
  struct stat root {
  }, up{};
  check(::stat("/", &root) == 0 && ::stat("../../..", &up) == 0 && root.st_ino == up.st_ino &&
            root.st_dev == up.st_dev,
        "../../.. is the root");
  check(::access("../../../etc", F_OK) != 0 && errno == ENOENT, "../../../etc is not the host's");
  check(::access("/proc", F_OK) != 0 && errno == ENOENT, "/proc is gone");
  check(::access("/tmp", F_OK) != 0 && errno == ENOENT, "/tmp is gone");
  int f = ::open("/new-file", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  check(f < 0 && (errno == EROFS || errno == EACCES), "creating a file in / fails");
  check(::mkdir("/new-dir", 0700) != 0, "creating a directory in / fails");
  struct statvfs svfs {};
  check(::statvfs("/", &svfs) == 0 && (svfs.f_flag & ST_RDONLY) && (svfs.f_flag & ST_NOEXEC) &&
            (svfs.f_flag & ST_NOSUID) && (svfs.f_flag & ST_NODEV),
        "/ is read-only, noexec, nosuid, nodev");
  char cwd[64] = {};
  check(::getcwd(cwd, sizeof cwd) && std::string(cwd) == "/", "cwd is /");
  char host[HOST_NAME_MAX + 1] = {};
  check(::gethostname(host, sizeof host) == 0 && host == name, "hostname");
  // A file descriptor opened before enter() still reaches the host's file.
  char buf[8] = {};
  check(::pread(data, buf, sizeof buf, 0) == 2 && std::string(buf) == "hi",
        "a file through a descriptor opened before");
  // The network namespace is empty: loopback is down.
  Fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(9);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(s && ::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 &&
            errno == ENETUNREACH,
        "loopback is down");
  return failed;
}

// A child cloned as PID 1 of a new PID namespace: it calls enter(`mount_point`, `name`), runs
// check_jail() and writes "ok" or what failed, then stays until `release` is called, so that
// the parent can look at it from outside.
struct JailedChild {
  pid_t pid = -1;
  Pipe report = Pipe::make();
  Pipe hold = Pipe::make();

  JailedChild(const std::string& dir, const std::string& name, int data,
              int network = jail::kNewNetwork, int mount_base = -1) {
    pid = static_cast<pid_t>(::syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0));
    REQUIRE(pid >= 0);
    if (pid == 0) {
      report.read.reset();
      hold.write.reset();
      std::string out;
      try {
        jail::enter(dir, name, network, nullptr, mount_base);
        out = check_jail(data, name);
        if (out.empty()) out = "ok";
      } catch (const std::exception& e) {
        out = std::string("threw: ") + e.what();
      }
      write_all(report.write.get(), out.data(), out.size());
      report.write.reset();
      char c;
      while (::read(hold.read.get(), &c, 1) > 0) {
      }
      ::_exit(0);
    }
    report.write.reset();
    hold.read.reset();
  }
  // What it reported (once it has).
  std::string result() {
    std::string out;
    char buf[512];
    size_t n;
    while ((n = read_full(report.read.get(), buf, sizeof buf)) > 0) out.append(buf, n);
    return out;
  }
  // Lets it exit and reaps it; its waitpid() status.
  int release() {
    hold.write.reset();
    int status = 0;
    if (pid > 0) REQUIRE(::waitpid(pid, &status, 0) == pid);
    pid = -1;
    return status;
  }
  ~JailedChild() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// A file "hello" (content "hi"), opened: what check_jail() reads through a descriptor opened
// before enter().
struct DataFile {
  test::TempDir dir{"root-data"};
  Fd fd;
  DataFile() {
    fs::write_file_atomic(dir.path + "/hello", "hi", 0644, fs::Sync::Volatile);
    fd.reset(::open((dir.path + "/hello").c_str(), O_RDONLY | O_CLOEXEC));
    REQUIRE(fd);
  }
};

// Makes `path` the directory a jail is given: it holds "inside" and nothing else.
void make_jail_dir(const std::string& path) {
  fs::write_file_atomic(path + "/inside", "", 0644, fs::Sync::Volatile);
}

bool mounted_at(const std::string& path) {
  std::string mi = fs::read_file("/proc/self/mountinfo", 1u << 20);
  return mi.find(" " + path + " ") != std::string::npos;
}

}  // namespace

TEST_CASE("root: in_own_pid_namespace() tells a child in a new PID namespace from its parent" *
          test::needs_root()) {
  const bool here = jail::in_own_pid_namespace();
  pid_t pid = static_cast<pid_t>(::syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0));
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(jail::in_own_pid_namespace() ? 0 : 1);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // A fork stays in ours: it answers as we do.
  pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(jail::in_own_pid_namespace() == here ? 0 : 1);
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WEXITSTATUS(status) == 0);
}

// Skipped where the test binary itself runs as a PID namespace's first process.
TEST_CASE("root: enter() refuses outside a PID namespace of its own, before touching anything" *
          doctest::skip(jail::in_own_pid_namespace())) {
  test::TempDir dir("root");
  ino_t mnt_ns = inode("/proc/self/ns/mnt");
  ino_t net_ns = inode("/proc/self/ns/net");
  std::string host = hostname();
  CHECK_THROWS_WITH_AS(jail::enter(dir.path, "refused"),
                       doctest::Contains("not in a PID namespace of its own"), Error);
  CHECK(inode("/proc/self/ns/mnt") == mnt_ns);
  CHECK(inode("/proc/self/ns/net") == net_ns);
  CHECK(hostname() == host);
  CHECK_FALSE(mounted_at(dir.path));
}

TEST_CASE(
    "root: enter() as PID 1 makes its directory the read-only root, with namespaces of its own" *
    test::needs_root()) {
  test::TempDir mnt("root-mnt");
  make_jail_dir(mnt.path);
  DataFile data;
  std::string host = hostname();
  JailedChild child(mnt.path, "jtest", data.fd.get());
  CHECK(child.result() == "ok");
  // From outside, while it lives: namespaces of its own, and nothing of its mounts here.
  std::string ns = "/proc/" + std::to_string(child.pid) + "/ns/";
  for (const char* kind : {"mnt", "net", "uts", "ipc", "pid"}) {
    CAPTURE(kind);
    CHECK(inode(ns + kind) != inode(std::string("/proc/self/ns/") + kind));
  }
  CHECK_FALSE(mounted_at(mnt.path));
  CHECK(device_of(mnt.path) == device_of("/tmp"));
  CHECK(hostname() == host);
  int status = child.release();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(fs::list_dir(mnt.path) == std::vector<std::string>{"inside"});
}

TEST_CASE("root: enter() given a network namespace joins it, and makes none" * test::needs_root()) {
  test::TempDir mnt("root-mnt");
  make_jail_dir(mnt.path);
  DataFile data;
  // An empty namespace, held by a child that made it (as jail/network.h's bind mount holds one).
  Pipe made = Pipe::make(), hold = Pipe::make();
  pid_t holder = ::fork();
  REQUIRE(holder >= 0);
  if (holder == 0) {
    char c = ::unshare(CLONE_NEWNET) == 0 ? 'y' : 'n';
    (void)!::write(made.write.get(), &c, 1);
    hold.write.reset();
    while (::read(hold.read.get(), &c, 1) > 0) {
    }
    ::_exit(0);
  }
  made.write.reset();
  hold.read.reset();
  char c = 0;
  REQUIRE(::read(made.read.get(), &c, 1) == 1);
  REQUIRE(c == 'y');
  const std::string holder_net = "/proc/" + std::to_string(holder) + "/ns/net";
  Fd network(::open(holder_net.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(network);
  JailedChild a(mnt.path, "ja", data.fd.get(), network.get());
  CHECK(a.result() == "ok");  // loopback down there too
  std::string ns = "/proc/" + std::to_string(a.pid) + "/ns/";
  CHECK(inode(ns + "net") == inode(holder_net));
  CHECK(inode(ns + "net") != inode("/proc/self/ns/net"));
  CHECK(inode(ns + "mnt") != inode("/proc/self/ns/mnt"));
  CHECK(a.release() == 0);
  hold.write.reset();
  ::waitpid(holder, nullptr, 0);
}

TEST_CASE("root: enter() under a shared mount propagates nothing to the host" *
          test::needs_root()) {
  // A tmpfs of our own, shared: without enter() making its mounts private, the jail's bind mount
  // of a directory in it would appear here too (and pivot_root would refuse it).
  test::TempDir base("root-shared");
  DataFile data;
  REQUIRE(::mount("space-test", base.path.c_str(), "tmpfs", 0, "size=64k") == 0);
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{base.path};
  REQUIRE(::mount(nullptr, base.path.c_str(), nullptr, MS_SHARED, nullptr) == 0);
  const std::string mnt = base.path + "/mnt";
  REQUIRE(::mkdir(mnt.c_str(), 0755) == 0);
  make_jail_dir(mnt);
  JailedChild child(mnt, "jtest", data.fd.get());
  CHECK(child.result() == "ok");
  CHECK(mounted_at(base.path));
  CHECK_FALSE(mounted_at(mnt));
  CHECK(device_of(mnt) == device_of(base.path));
  CHECK(child.release() == 0);
  CHECK(fs::list_dir(mnt) == std::vector<std::string>{"inside"});
}

TEST_CASE("root: enter() truncates the hostname to 64 bytes and names a failed step" *
          test::needs_root()) {
  test::TempDir mnt("root-mnt");
  make_jail_dir(mnt.path);
  DataFile data;
  {
    // check_jail() compares with the first 64 bytes of the name.
    pid_t pid = static_cast<pid_t>(::syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0));
    REQUIRE(pid >= 0);
    if (pid == 0) {
      try {
        jail::enter(mnt.path, std::string(100, 'h'));
      } catch (...) {
        ::_exit(2);
      }
      ::_exit(check_jail(data.fd.get(), std::string(64, 'h')).empty() ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  JailedChild missing(mnt.path + "/no-such-dir", "jtest", data.fd.get());
  CHECK(missing.result().find("threw: jail: bind " + mnt.path + "/no-such-dir onto itself") == 0);
  missing.release();
}

// The jails' base mount namespace at a directory of this test's, unmounted at the end.
struct MountBase {
  test::MountBaseDir dir{"root-base"};
  Fd fd = jail::shared_mount_base(dir.path);
};

TEST_CASE("root: enter() from the jails' base mount namespace: the same jail, nothing unmounted" *
          test::needs_root()) {
  MountBase base;
  test::TempDir mnt("root-mnt");
  make_jail_dir(mnt.path);
  DataFile data;
  std::string host = hostname();
  const std::string before = fs::read_file("/proc/self/mountinfo", 1u << 20);
  JailedChild child(mnt.path, "jbase", data.fd.get(), jail::kNewNetwork, base.fd.get());
  CHECK(child.result() == "ok");
  // From outside: a namespace of its own (not the base itself), whose one visible mount is its
  // root, read-only; nothing of it here.
  const std::string proc = "/proc/" + std::to_string(child.pid);
  struct stat own_base {};
  REQUIRE(::fstat(base.fd.get(), &own_base) == 0);
  CHECK(inode(proc + "/ns/mnt") != own_base.st_ino);
  CHECK(inode(proc + "/ns/mnt") != inode("/proc/self/ns/mnt"));
  std::string mountinfo = fs::read_file(proc + "/mountinfo", 1u << 20);
  CHECK(std::count(mountinfo.begin(), mountinfo.end(), '\n') == 1);
  CHECK(mountinfo.find(" / ro,nosuid,nodev,noexec") != std::string::npos);
  CHECK(inode(proc + "/root") == inode(mnt.path));
  CHECK(inode(proc + "/cwd") == inode(mnt.path));
  CHECK(fs::read_file("/proc/self/mountinfo", 1u << 20) == before);
  CHECK(hostname() == host);
  CHECK(child.release() == 0);
  CHECK(fs::list_dir(mnt.path) == std::vector<std::string>{"inside"});
  // The base is as it was: a second jail from it is the same.
  JailedChild again(mnt.path, "jbase2", data.fd.get(), jail::kNewNetwork, base.fd.get());
  CHECK(again.result() == "ok");
  CHECK(again.release() == 0);
  JailedChild missing(mnt.path + "/no-such-dir", "jtest", data.fd.get(), jail::kNewNetwork,
                      base.fd.get());
  CHECK(missing.result().find("threw: jail: clone a mount of " + mnt.path + "/no-such-dir") == 0);
  missing.release();
}
