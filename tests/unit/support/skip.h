// Skips doctest counts as skips, not passes: decorators evaluated once, when the test binary
// starts, so a case that cannot run on this host is reported under "skipped" with its name
// (doctest's --list-test-cases shows them too), never run half-way and passed.
//   TEST_CASE("mounts a store" * test::needs_root())
#pragma once
#include <doctest/doctest.h>
#include <unistd.h>

namespace space::test {

// Skipped unless the binary runs as root (uids, mounts, namespaces, cgroups, capabilities).
inline doctest::skip needs_root() {
  return doctest::skip(::geteuid() != 0);
}

// Whether this build runs under AddressSanitizer, for cases its runtime cannot take part in.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderAsan = true;
#else
inline constexpr bool kUnderAsan = false;
#endif

// Whether this is an x86-64 build, for cases whose raw system-call numbers or filters are its.
#if defined(__x86_64__)
inline constexpr bool kX86_64 = true;
#else
inline constexpr bool kX86_64 = false;
#endif

}  // namespace space::test
