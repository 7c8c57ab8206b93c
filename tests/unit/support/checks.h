// Small checks shared by several unit tests: a file's permission bits, the mounts at a path,
// every truncation of an encoded message refused by its decoder, and a CPUID leaf built from its
// registers.
#pragma once
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "proto/wire.h"
#include "util/fs.h"
#include "vmm/kvm_api.h"

namespace space::test {

// The permission bits of `path` (which must exist).
inline mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// The lines of our /proc/self/mountinfo whose mount point is `path`.
inline std::vector<std::string> mounts_at(const std::string& path) {
  std::string mi = fs::read_file("/proc/self/mountinfo", 1u << 20);
  std::vector<std::string> out;
  for (size_t start = 0; start < mi.size();) {
    size_t end = mi.find('\n', start);
    if (end == std::string::npos) end = mi.size();
    std::string line = mi.substr(start, end - start);
    if (line.find(" " + path + " ") != std::string::npos) out.push_back(line);
    start = end + 1;
  }
  return out;
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
