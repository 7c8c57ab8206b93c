// Unit tests for vmm/arch/x86_64/cpu_features: the feature words taken from a CPUID table, and the
// check that names the features a snapshot needs and this host lacks.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "support/checks.h"
#include "vmm/arch/x86_64/cpu_features.h"

TEST_CASE("cpu features: extraction and the host check") {
  using namespace space::vmm::x86;
  std::vector<kvm_cpuid_entry2> t = {
      space::test::cpuid_leaf(0, 0, 1, 1, 1), space::test::cpuid_leaf(1, 0, 0, 0xa, 0xb),
      space::test::cpuid_leaf(7, 1, 9, 9, 9), space::test::cpuid_leaf(7, 0, 0x20, 0x40, 0x80)};
  CpuFeatures f = cpu_features_of(t);
  CHECK(f.leaf1_ecx == 0xa);
  CHECK(f.leaf1_edx == 0xb);
  CHECK(f.leaf7_ebx == 0x20);  // subleaf 0, not 1
  CHECK(f.leaf7_ecx == 0x40);
  CHECK(f.leaf7_edx == 0x80);

  CpuFeatures need{}, have{};
  need.leaf7_ebx = (1u << 5) | (1u << 16);                // avx2, avx512f
  need.leaf1_ecx = (1u << 31) | (1u << 27) | (1u << 28);  // hypervisor, osxsave: not required; avx
  need.leaf7_edx = 1u;                                    // unnamed bit 0
  have.leaf7_ebx = 1u << 5;
  auto missing = missing_cpu_features(need, have);
  CHECK(missing == std::vector<std::string>{"avx", "avx512f", "cpuid.7.edx bit 0"});
  have = need;
  CHECK(missing_cpu_features(need, have).empty());
  CHECK(missing_cpu_features({}, {}).empty());
}
