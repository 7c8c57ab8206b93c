// Unit tests for egress/host_address: the kernel's answer on the host's own addresses, for the
// calling thread's network namespace. Loopback and every address of this machine's interfaces
// are its own; in a namespace the test makes, a public address put on its loopback is that
// namespace's own (and classify_at_host calls it HostOwn) while its neighbours, and the same
// address seen from the host's namespace, are not.
#include <doctest/doctest.h>
#include <ifaddrs.h>

#include <string>
#include <vector>

#include "egress/host_address.h"
#include "support/ip_address.h"
#include "support/own_netns.h"
#include "support/skip.h"

using namespace space;
using namespace space::egress;

namespace {

using test::ip;

// Public addresses (as classify() sees them) that the test's namespace takes as its own.
constexpr const char* kOwn4 = "93.184.216.34";
constexpr const char* kOwn6 = "2606:2800:220:1:248:1893:25c8:1946";

}  // namespace

TEST_SUITE("egress/host_address") {
  TEST_CASE("loopback and the addresses of this machine's interfaces are the host's own") {
    for (const char* a : {"127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "::ffff:127.0.0.1"}) {
      CAPTURE(a);
      CHECK(is_host_address(ip(a)));
      CHECK(classify_at_host(ip(a)) == AddressClass::Loopback);  // classify() decides first
    }
    ifaddrs* list = nullptr;
    REQUIRE(::getifaddrs(&list) == 0);
    int seen = 0;
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      auto a = IpAddress::from_sockaddr(i->ifa_addr);
      if (!a) continue;
      CAPTURE(i->ifa_name);
      CAPTURE(a->to_string());
      CHECK(is_host_address(*a));
      AddressClass c = classify(*a);
      CHECK(classify_at_host(*a) == (c == AddressClass::Public ? AddressClass::HostOwn : c));
      seen++;
    }
    ::freeifaddrs(list);
    CHECK(seen >= 1);
  }

  TEST_CASE("a public address on an interface of the namespace is its own, and only there" *
            test::needs_root()) {
    CHECK(classify(ip(kOwn4)) == AddressClass::Public);
    CHECK(classify(ip(kOwn6)) == AddressClass::Public);
    // From the host's namespace these are someone else's (or unreachable).
    CHECK_FALSE(is_host_address(ip(kOwn4)));
    CHECK_FALSE(is_host_address(ip(kOwn6)));
    CHECK(classify_at_host(ip(kOwn4)) == AddressClass::Public);
    test::in_own_netns({kOwn4, kOwn6}, [] {
      CHECK(is_host_address(ip(kOwn4)));
      CHECK(is_host_address(ip(kOwn6)));
      CHECK(is_host_address(ip("::ffff:93.184.216.34")));
      CHECK(classify_at_host(ip(kOwn4)) == AddressClass::HostOwn);
      CHECK(classify_at_host(ip(kOwn6)) == AddressClass::HostOwn);
      CHECK(classify_at_host(ip("::ffff:93.184.216.34")) == AddressClass::HostOwn);
      // Its neighbours have no route here: not the host's.
      CHECK_FALSE(is_host_address(ip("93.184.216.35")));
      CHECK_FALSE(is_host_address(ip("2606:2800:220:1:248:1893:25c8:1947")));
      CHECK(classify_at_host(ip("93.184.216.35")) == AddressClass::Public);
      CHECK(is_host_address(ip("127.0.0.1")));
      CHECK(is_host_address(ip("::1")));
    });
    CHECK_FALSE(is_host_address(ip(kOwn4)));  // the test's thread never moved
  }
}
