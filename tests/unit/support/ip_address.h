// ip("192.0.2.1"): an egress::IpAddress from a literal the test knows is valid (the test fails,
// naming the text, if it is not), for the tests of the egress rules and address checks.
#pragma once
#include <doctest/doctest.h>

#include "egress/policy.h"

namespace space::test {

inline egress::IpAddress ip(const char* text) {
  auto a = egress::IpAddress::parse(text);
  REQUIRE_MESSAGE(a, text);
  return *a;
}

}  // namespace space::test
