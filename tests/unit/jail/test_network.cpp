// Unit tests for jail/network: shared_network() makes one empty network namespace at a path (a
// bind mount that outlives its maker), with only a loopback device, down, and hands the same one
// to a later caller. (How the namespace is kept, locked and checked is jail/ns_file's, tested
// there.) Root only (they mount); every mount is undone when a test ends.
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
  return test::output_of_child([network] {
    std::string s;
    if (::setns(network, CLONE_NEWNET) != 0) return std::string("error");
    if (struct if_nameindex* names = ::if_nameindex()) {
      Fd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
      for (struct if_nameindex* i = names; i->if_index; i++) {
        ifreq r{};
        std::snprintf(r.ifr_name, sizeof r.ifr_name, "%s", i->if_name);
        bool up = sock && ::ioctl(sock.get(), SIOCGIFFLAGS, &r) == 0 && (r.ifr_flags & IFF_UP);
        s += (s.empty() ? "" : ",") + std::string(i->if_name) + (up ? "" : "-");
      }
      ::if_freenameindex(names);
    }
    return s;
  });
}

}  // namespace

TEST_CASE("network: the jails' namespace has only a loopback device, down" * test::needs_root()) {
  NetnsDir d;
  Fd net = jail::shared_network(d.path);
  CHECK(interfaces_in(net.get()) == "lo-");
  CHECK(jail::is_namespace(net.get(), CLONE_NEWNET));
  CHECK(test::mounts_at(d.path).size() == 1);  // kept by its mount: the child that made it is gone
}
