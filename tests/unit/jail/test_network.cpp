// Unit tests for jail/network: shared_network() makes one empty network namespace at a path (a
// bind mount that outlives its maker), hands the same one to every later caller, and to
// concurrent ones; mounts one over a plain file a reboot left; and refuses a path that holds the
// caller's own namespace. Root only (they mount); every mount is undone when a test ends.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "jail/network.h"
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

ino_t own_network() {
  Fd own(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  REQUIRE(own);
  return inode_of(own.get());
}

int mounts_at(const std::string& path) {
  std::string mi = fs::read_file("/proc/self/mountinfo", 1u << 20);
  int n = 0;
  for (size_t at = mi.find(" " + path + " "); at != std::string::npos;
       at = mi.find(" " + path + " ", at + 1))
    n++;
  return n;
}

// A directory for the namespace's file, whose mounts are undone (all of them) at the end.
struct NetnsDir {
  test::TempDir dir{"netns"};
  std::string path = dir.path + "/netns";
  ~NetnsDir() {
    while (::umount2(path.c_str(), MNT_DETACH) == 0) {
    }
  }
};

// The interfaces a child sees after joining `network`, as "name,name" with "-" appended to a
// name that is down; "error" if it cannot join.
std::string interfaces_in(int network) {
  Pipe out = Pipe::make();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::string s;
    if (::setns(network, CLONE_NEWNET) != 0) {
      s = "error";
    } else if (struct if_nameindex* names = ::if_nameindex()) {
      Fd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
      for (struct if_nameindex* i = names; i->if_index; i++) {
        ifreq r{};
        std::snprintf(r.ifr_name, sizeof r.ifr_name, "%s", i->if_name);
        bool up = sock && ::ioctl(sock.get(), SIOCGIFFLAGS, &r) == 0 && (r.ifr_flags & IFF_UP);
        s += (s.empty() ? "" : ",") + std::string(i->if_name) + (up ? "" : "-");
      }
      ::if_freenameindex(names);
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

TEST_CASE("network: shared_network makes one empty namespace and hands it out again") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: needs root");
    return;
  }
  NetnsDir d;
  Fd first = jail::shared_network(d.path);
  REQUIRE(first);
  CHECK(jail::is_network_namespace(first.get()));
  CHECK(inode_of(first.get()) != own_network());
  CHECK(mounts_at(d.path) == 1);               // kept by its mount: the child that made it is gone
  CHECK(interfaces_in(first.get()) == "lo-");  // only loopback, down
  Fd again = jail::shared_network(d.path);
  CHECK(inode_of(again.get()) == inode_of(first.get()));
  CHECK(mounts_at(d.path) == 1);
}

TEST_CASE("network: concurrent first callers make one namespace") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: needs root");
    return;
  }
  NetnsDir d;
  pid_t kids[4];
  for (pid_t& k : kids) {
    k = ::fork();
    REQUIRE(k >= 0);
    if (k == 0) {
      try {
        jail::shared_network(d.path);
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
  CHECK(mounts_at(d.path) == 1);
}

TEST_CASE("network: a plain file left by a reboot gets a namespace; the host's own is refused") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: needs root");
    return;
  }
  NetnsDir d;
  fs::write_file_atomic(d.path, "", 0400, fs::Sync::Volatile);
  Fd fd = jail::shared_network(d.path);
  CHECK(jail::is_network_namespace(fd.get()));
  CHECK(mounts_at(d.path) == 1);

  NetnsDir host;
  fs::write_file_atomic(host.path, "", 0400, fs::Sync::Volatile);
  REQUIRE(::mount("/proc/self/ns/net", host.path.c_str(), nullptr, MS_BIND, nullptr) == 0);
  CHECK_THROWS_WITH_AS(jail::shared_network(host.path),
                       doctest::Contains("this host's own network namespace"), Error);
  Fd regular(::open(d.dir.path.c_str(), O_RDONLY | O_CLOEXEC));
  CHECK_FALSE(jail::is_network_namespace(regular.get()));
}
