// Skips doctest counts as skips, not passes: decorators evaluated once, when the test binary
// starts, so a case that cannot run on this host is reported under "skipped" with its name
// (doctest's --list-test-cases shows them too), never run half-way and passed.
//   TEST_CASE("mounts a store" * test::needs_root())
#pragma once
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "util/fd.h"
#include "vmm/kvm_api.h"

namespace space::test {

// Skipped unless the binary runs as root (uids, mounts, namespaces, cgroups, capabilities).
inline doctest::skip needs_root() {
  return doctest::skip(::geteuid() != 0);
}

// Whether /dev/kvm opens and answers KVM's API version: the cases that run a real VM (a PVM
// host counts; a host whose kernel is itself a PVM guest has no working device).
inline bool kvm_usable() {
  Fd fd(::open("/dev/kvm", O_RDWR | O_CLOEXEC));
  return fd && ::ioctl(fd.get(), KVM_GET_API_VERSION, 0) == KVM_API_VERSION;
}

// Skipped unless a VM can run here (kvm_usable()); such a case's name says "(needs /dev/kvm)".
inline doctest::skip needs_kvm() {
  static const bool usable = kvm_usable();
  return doctest::skip(!usable);
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
