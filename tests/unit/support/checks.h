// Small checks shared by several unit tests: a file's permission bits, every truncation of an
// encoded message refused by its decoder, and a CPUID leaf built from its registers.
#pragma once
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "proto/wire.h"
#include "vmm/kvm_api.h"

namespace space::test {

// The permission bits of `path` (which must exist).
inline mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// M::decode must throw ProtoError on every proper prefix of `full` and on `full` plus a byte.
template <class M>
void check_every_truncation_throws(const std::vector<uint8_t>& full) {
  for (size_t n = 0; n < full.size(); n++)
    CHECK_THROWS_AS(M::decode({full.data(), n}), proto::ProtoError);
  auto longer = full;
  longer.push_back(0);
  CHECK_THROWS_AS(M::decode(longer), proto::ProtoError);
}

// A CPUID entry for leaf `fn`, subleaf `idx`.
inline kvm_cpuid_entry2 cpuid_leaf(uint32_t fn, uint32_t idx, uint32_t ebx, uint32_t ecx,
                                   uint32_t edx) {
  kvm_cpuid_entry2 e{};
  e.function = fn;
  e.index = idx;
  e.ebx = ebx;
  e.ecx = ecx;
  e.edx = edx;
  return e;
}

}  // namespace space::test
