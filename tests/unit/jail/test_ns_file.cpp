// Unit tests for jail/ns_file: kept_namespace() has a forked child make a namespace with its
// set-up and keeps it by a bind mount that outlives the child; hands the same one to every later
// caller, and to concurrent first ones; runs `prepare` only when it makes one; mounts one over a
// plain file a reboot left; refuses a path that holds the caller's own namespace; and names the
// errno of a set-up that failed, mounting nothing. A UTS namespace stands for every kind (its
// hostname tells whose it is). Root only (they mount); every mount is undone when a test ends.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <string>

#include "jail/ns_file.h"
#include "support/checks.h"
#include "support/forked.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"

using namespace space;

namespace {

const jail::NamespaceKind kUts{CLONE_NEWUTS, "uts", "UTS", "the test's UTS namespace"};

// Makes a UTS namespace whose hostname is "kept".
int setup_kept() {
  if (::unshare(CLONE_NEWUTS) != 0) return errno;
  return ::sethostname("kept", 4) == 0 ? 0 : errno;
}

ino_t inode_of(int fd) {
  struct stat st {};
  REQUIRE(::fstat(fd, &st) == 0);
  return st.st_ino;
}

// The hostname a child sees in namespace `fd`.
std::string hostname_in(int fd) {
  return test::output_of_child([fd] {
    char buf[HOST_NAME_MAX + 1] = {};
    if (::setns(fd, CLONE_NEWUTS) != 0 || ::gethostname(buf, sizeof buf) != 0)
      return std::string("error");
    return std::string(buf);
  });
}

// A path for the namespace's file, whose mounts are undone (all of them) at the end.
struct NsPath {
  test::TempDir dir{"nsfile"};
  std::string path = dir.path + "/ns";
  std::string lock = dir.path + "/ns.lock";
  ~NsPath() {
    while (::umount2(path.c_str(), MNT_DETACH) == 0) {
    }
  }
};

}  // namespace

TEST_CASE("ns_file: a namespace made by its set-up, kept by a mount, handed out again" *
          test::needs_root()) {
  NsPath p;
  int prepared = 0;
  Fd first = jail::kept_namespace(
      p.path, p.lock, kUts, [&] { prepared++; }, setup_kept);
  REQUIRE(first);
  CHECK(jail::is_namespace(first.get(), CLONE_NEWUTS));
  CHECK_FALSE(jail::is_namespace(first.get(), CLONE_NEWNET));
  CHECK(hostname_in(first.get()) == "kept");  // the child's set-up, kept after it exited
  CHECK(test::mounts_at(p.path).size() == 1);
  CHECK(prepared == 1);
  Fd again = jail::kept_namespace(
      p.path, p.lock, kUts, [&] { prepared++; }, setup_kept);
  CHECK(inode_of(again.get()) == inode_of(first.get()));
  CHECK(test::mounts_at(p.path).size() == 1);
  CHECK(prepared == 1);  // nothing to make: not prepared again
  Fd regular(::open(p.dir.path.c_str(), O_RDONLY | O_CLOEXEC));
  CHECK_FALSE(jail::is_namespace(regular.get(), CLONE_NEWUTS));
}

TEST_CASE("ns_file: concurrent first callers make one namespace" * test::needs_root()) {
  NsPath p;
  test::check_concurrent_children(
      4, [&p] { jail::kept_namespace(p.path, p.lock, kUts, nullptr, setup_kept); });
  CHECK(test::mounts_at(p.path).size() == 1);
}

TEST_CASE("ns_file: a plain file left by a reboot gets a namespace; the host's own is refused" *
          test::needs_root()) {
  NsPath p;
  fs::write_file_atomic(p.path, "", 0400, fs::Sync::Volatile);
  Fd fd = jail::kept_namespace(p.path, p.lock, kUts, nullptr, setup_kept);
  CHECK(hostname_in(fd.get()) == "kept");
  CHECK(test::mounts_at(p.path).size() == 1);

  NsPath host;
  fs::write_file_atomic(host.path, "", 0400, fs::Sync::Volatile);
  REQUIRE(::mount("/proc/self/ns/uts", host.path.c_str(), nullptr, MS_BIND, nullptr) == 0);
  CHECK_THROWS_WITH_AS(jail::kept_namespace(host.path, host.lock, kUts, nullptr, setup_kept),
                       doctest::Contains("this host's own UTS namespace"), Error);
}

TEST_CASE("ns_file: a set-up that fails is named with its errno, and nothing is mounted" *
          test::needs_root()) {
  NsPath p;
  CHECK_THROWS_WITH_AS(jail::kept_namespace(p.path, p.lock, kUts, nullptr, [] { return EPERM; }),
                       doctest::Contains("make the test's UTS namespace: Operation not permitted"),
                       Error);
  CHECK(test::mounts_at(p.path).size() == 0);
  CHECK_THROWS_WITH_AS(jail::kept_namespace(
                           p.path, p.lock, kUts, [] { fail("not prepared"); }, setup_kept),
                       doctest::Contains("not prepared"), Error);
  CHECK(test::mounts_at(p.path).size() == 0);
}
