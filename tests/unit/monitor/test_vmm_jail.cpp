// Unit tests for the VMM's side of the jail's set-up (monitor/vmm_jail): wait_placed() on the pipe
// from the jail's PID 1 ("p": placed; kPlacementFailed and a reason: refused with that reason; EOF
// without a word: refused; no pipe: no wait), and passed_fd() / network_from_fd() /
// mount_base_from_fd() on descriptors that are not open or not the namespace named.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "jail/init.h"
#include "monitor/vmm_jail.h"
#include "util/error.h"
#include "util/fd.h"

using namespace space;

namespace {
// The read end of a pipe whose writer wrote `what` and closed it.
Fd told(const std::string& what) {
  Pipe p = Pipe::make();
  if (!what.empty()) write_all(p.write.get(), what.data(), what.size());
  p.write.reset();
  return std::move(p.read);
}
}  // namespace

TEST_CASE("wait_placed: placed, refused with the init's reason, or refused when told nothing") {
  CHECK_NOTHROW(monitor::wait_placed(told("p")));
  CHECK_NOTHROW(monitor::wait_placed(Fd()));  // not jailed into cgroups: nothing to wait for
  CHECK_THROWS_WITH_AS(
      monitor::wait_placed(told(std::string(1, jail::kPlacementFailed) +
                                "cgroup: mkdir /sys/fs/cgroup/memory/space/x: No space left")),
      doctest::Contains("not put in its cgroups, so it would run outside its limits: cgroup: "
                        "mkdir /sys/fs/cgroup/memory/space/x: No space left"),
      Error);
  CHECK_THROWS_WITH_AS(monitor::wait_placed(told("")),
                       doctest::Contains("could not move the VMM into its cgroups"), Error);
}

TEST_CASE("passed_fd, network_from_fd and mount_base_from_fd check what they are given") {
  CHECK_FALSE(monitor::passed_fd(-1, "--x"));
  CHECK_THROWS_WITH_AS(monitor::passed_fd(987, "--jail-netns-fd"),
                       doctest::Contains("--jail-netns-fd 987 is not open"), Error);
  int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);  // adopted by network_from_fd, which closes it when it throws
  CHECK_THROWS_WITH_AS(monitor::network_from_fd(fd),
                       doctest::Contains("is not a network namespace"), Error);
  CHECK_FALSE(monitor::mount_base_from_fd(-1));
  fd = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);  // a namespace, of the wrong kind
  REQUIRE(fd >= 0);
  const std::string wrong_kind =
      "--jail-mntns-fd " + std::to_string(fd) + " is not a mount namespace";
  CHECK_THROWS_WITH_AS(monitor::mount_base_from_fd(fd), doctest::Contains(wrong_kind.c_str()),
                       Error);
  fd = ::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  CHECK(monitor::mount_base_from_fd(fd));  // adopted, and closed with the Fd
}
