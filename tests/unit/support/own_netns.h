// in_own_netns: runs a test's function on a thread of its own in a new network namespace, with
// its loopback up and the given addresses added to it (each IPv4 one as a /32, each IPv6 one as
// a /128, each with its local route when the function starts), so that a test may own
// public-looking addresses and serve on them without a packet leaving that namespace. Threads
// the function starts inherit the namespace. Needs root and a kernel that lets it
// unshare(CLONE_NEWNET); returns false without running the function when the namespace cannot
// be made (the caller says it skipped), true once it ran. A failed REQUIRE on that thread fails
// the test as on the test's own.
#pragma once
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "util/fd.h"

namespace space::test {

namespace own_netns_detail {

// linux/ipv6.h's in6_ifreq, which does not mix with netinet/in.h.
struct In6Ifreq {
  in6_addr addr;
  uint32_t prefixlen;
  int ifindex;
};

// True when the calling thread's namespace has a local route to `addr` (RTF_LOCAL, /128).
inline bool has_local_route6(const in6_addr& addr) {
  char hex[33];
  for (int i = 0; i < 16; i++) std::snprintf(hex + 2 * i, 3, "%02x", addr.s6_addr[i]);
  std::ifstream routes("/proc/thread-self/net/ipv6_route");
  std::string line;
  while (std::getline(routes, line)) {
    std::istringstream f(line);
    std::string dst, len, src, src_len, next_hop, metric, refs, use, flags;
    f >> dst >> len >> src >> src_len >> next_hop >> metric >> refs >> use >> flags;
    if (dst == hex && len == "80" && (std::stoul(flags, nullptr, 16) & 0x80000000u)) return true;
  }
  return false;
}

// Sets up the calling thread's new namespace; "" or what failed.
inline std::string set_up(const std::vector<std::string>& addresses) {
  Fd s4(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s4) return std::string("socket: ") + std::strerror(errno);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(s4.get(), SIOCGIFFLAGS, &ifr) != 0) return "SIOCGIFFLAGS lo";
  ifr.ifr_flags = short(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
  if (::ioctl(s4.get(), SIOCSIFFLAGS, &ifr) != 0) return "SIOCSIFFLAGS lo";
  int alias = 0;
  for (const auto& a : addresses) {
    if (a.find(':') == std::string::npos) {
      ifreq r{};
      std::snprintf(r.ifr_name, IFNAMSIZ, "lo:%d", ++alias);
      auto* sin = reinterpret_cast<sockaddr_in*>(&r.ifr_addr);
      sin->sin_family = AF_INET;
      if (::inet_pton(AF_INET, a.c_str(), &sin->sin_addr) != 1) return "not an address: " + a;
      if (::ioctl(s4.get(), SIOCSIFADDR, &r) != 0) return "SIOCSIFADDR " + a;
      ::inet_pton(AF_INET, "255.255.255.255", &sin->sin_addr);
      if (::ioctl(s4.get(), SIOCSIFNETMASK, &r) != 0) return "SIOCSIFNETMASK " + a;
      continue;
    }
    Fd s6(::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!s6) return std::string("socket AF_INET6: ") + std::strerror(errno);
    In6Ifreq r{};
    if (::inet_pton(AF_INET6, a.c_str(), &r.addr) != 1) return "not an address: " + a;
    r.prefixlen = 128;
    r.ifindex = int(::if_nametoindex("lo"));
    if (::ioctl(s6.get(), SIOCSIFADDR, &r) != 0)
      return "SIOCSIFADDR " + a + ": " + std::strerror(errno);
    // The kernel finishes an IPv6 address, and adds its local route, on a work queue.
    for (int i = 0; !has_local_route6(r.addr); i++) {
      if (i == 200) return "no local route to " + a + " after 2 s";
      ::usleep(10'000);
    }
  }
  return "";
}

}  // namespace own_netns_detail

inline bool in_own_netns(const std::vector<std::string>& addresses,
                         const std::function<void()>& fn) {
  // A case that calls this is marked test::needs_root() (support/skip.h): as root, a namespace
  // that cannot be made is a failure, not a skip.
  REQUIRE_MESSAGE(::geteuid() == 0, "in_own_netns needs root: mark the case test::needs_root()");
  std::string problem;
  bool made = false;
  std::exception_ptr failed;
  std::thread t([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      problem = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
      return;
    }
    made = true;
    problem = own_netns_detail::set_up(addresses);
    if (!problem.empty()) return;
    try {
      fn();
    } catch (...) {
      failed = std::current_exception();
    }
  });
  t.join();
  REQUIRE_MESSAGE(made, problem);
  REQUIRE_MESSAGE(problem.empty(), problem);
  if (failed) std::rethrow_exception(failed);
  return true;
}

}  // namespace space::test
