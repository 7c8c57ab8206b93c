// Unit tests for the CPUID filter.
#include <doctest/doctest.h>

#include "vmm/arch/x86_64/cpuid.h"

using namespace space::vmm::x86;

namespace {
std::vector<kvm_cpuid_entry2> sample() {
  kvm_cpuid_entry2 l1{};
  l1.function = 1;
  l1.ecx = (1u << 13) | 1u;  // cx16, sse3
  l1.ebx = 0xff00ffff;
  l1.edx = 1u << 28;
  kvm_cpuid_entry2 lb{};
  lb.function = 0xb;
  kvm_cpuid_entry2 other{};
  other.function = 7;
  other.ebx = 0x1234;
  kvm_cpuid_entry2 kvm{};
  kvm.function = 0x40000001;
  kvm.eax = 0x1007efb;  // this PVM host's KVM_GET_SUPPORTED_CPUID
  return {l1, lb, other, kvm};
}
}  // namespace

TEST_CASE("cpuid: APIC ids, hypervisor bit, counts") {
  auto out = filter_cpuid(sample(), {2, 4, false});
  CHECK((out[0].ebx >> 24) == 2);
  CHECK(((out[0].ebx >> 16) & 0xff) == 4);
  CHECK((out[0].ebx & 0xffff) == 0xffff);
  CHECK((out[0].ecx & (1u << 31)) != 0);
  CHECK((out[0].ecx & (1u << 13)) != 0);  // cx16 kept on hardware hosts
  CHECK((out[0].edx & (1u << 28)) != 0);
  CHECK(out[1].edx == 2);
  CHECK(out[2].ebx == 0x1234);     // untouched
  CHECK(out[3].eax == 0x1007efb);  // every KVM feature kept on hardware hosts
}

TEST_CASE("cpuid: PVM hosts lose cx16; one vCPU has no HTT") {
  auto out = filter_cpuid(sample(), {0, 1, true});
  CHECK((out[0].ecx & (1u << 13)) == 0);
  CHECK((out[0].ecx & 1u) == 1);
  CHECK((out[0].edx & (1u << 28)) == 0);
}

TEST_CASE("cpuid: PVM hosts lose the KVM features that use hypercalls") {
  auto out = filter_cpuid(sample(), {1, 2, true});
  CHECK((out[3].eax & (1u << 7)) == 0);   // PV_UNHALT
  CHECK((out[3].eax & (1u << 11)) == 0);  // PV_SEND_IPI
  CHECK((out[3].eax & (1u << 13)) == 0);  // PV_SCHED_YIELD
  CHECK(out[3].eax == 0x100567b);         // kvm-clock, steal time, PV EOI, PV TLB flush... kept
}
