// Unit tests for egress/netns.h: only a network namespace file is recorded; the record round
// trips and is removed; enter_netns moves only the calling thread, into exactly that namespace
// (checked by inode against a child that made a namespace of its own, when we may make one).
#include <doctest/doctest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "egress/netns.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;

namespace {

ino_t inode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_ino;
}

}  // namespace

TEST_CASE("egress netns: only network namespaces are recorded") {
  test::TempDir t("netns");
  egress::EgressPaths p = egress::egress_paths(t.path);
  CHECK_FALSE(egress::load_netns(p, "s1"));
  fs::write_file_atomic(t.path + "/plain", "x");
  CHECK_THROWS_WITH_AS(egress::save_netns(p, "s1", t.path + "/plain"),
                       doctest::Contains("is not a namespace file"), Error);
  CHECK_THROWS_WITH_AS(egress::save_netns(p, "s1", "/proc/self/ns/uts"),
                       doctest::Contains("not a network namespace"), Error);
  CHECK_THROWS_WITH_AS(egress::save_netns(p, "s1", "relative/ns"),
                       doctest::Contains("not an absolute path"), Error);
  CHECK_THROWS_AS(egress::save_netns(p, "s1", t.path + "/nosuch"), Error);
  CHECK_FALSE(egress::load_netns(p, "s1"));
  egress::save_netns(p, "s1", "/proc/self/ns/net");
  CHECK(egress::load_netns(p, "s1") == std::string("/proc/self/ns/net"));
  CHECK(egress::remove_netns(p, "s1"));
  CHECK_FALSE(egress::remove_netns(p, "s1"));
  CHECK_FALSE(egress::load_netns(p, "s1"));
  CHECK_THROWS_AS(egress::netns_file(p, "../x"), Error);
}

TEST_CASE("egress netns: enter_netns moves the calling thread only" * test::needs_root()) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    char ok = ::unshare(CLONE_NEWNET) == 0 ? '1' : '0';
    (void)!::write(ready[1], &ok, 1);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char ok = 0;
  REQUIRE(::read(ready[0], &ok, 1) == 1);
  ::close(ready[0]);
  const std::string theirs = "/proc/" + std::to_string(child) + "/ns/net";
  REQUIRE_MESSAGE(ok == '1', "unshare(CLONE_NEWNET) failed as root");
  {
    const ino_t ours = inode_of("/proc/self/ns/net");
    ino_t in_thread = 0;
    std::string error;
    std::thread th([&] {
      try {
        egress::enter_netns(theirs);
        in_thread = inode_of("/proc/thread-self/ns/net");
      } catch (const std::exception& e) {
        error = e.what();
      }
    });
    th.join();
    CHECK(error.empty());
    CHECK(in_thread == inode_of(theirs));
    CHECK(in_thread != ours);
    CHECK(inode_of("/proc/thread-self/ns/net") == ours);  // this thread stayed
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}
