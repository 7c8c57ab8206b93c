// CPUID filter; see cpuid.h.
#include "vmm/arch/x86_64/cpuid.h"

namespace space::vmm::x86 {
namespace {
constexpr uint32_t kLeaf1EcxCx16 = 1u << 13;
constexpr uint32_t kLeaf1EcxHypervisor = 1u << 31;
constexpr uint32_t kLeaf1EdxHtt = 1u << 28;
}  // namespace

std::vector<kvm_cpuid_entry2> filter_cpuid(std::vector<kvm_cpuid_entry2> entries,
                                           const CpuidPolicy& p) {
  const uint32_t apic_id = static_cast<uint32_t>(p.vcpu_index);
  for (auto& e : entries) {
    switch (e.function) {
      case 1:
        e.ebx = (e.ebx & 0x0000ffffu) | (apic_id << 24) |
                (static_cast<uint32_t>(p.vcpu_count & 0xff) << 16);
        e.ecx |= kLeaf1EcxHypervisor;
        if (p.pvm_host) e.ecx &= ~kLeaf1EcxCx16;
        if (p.vcpu_count > 1)
          e.edx |= kLeaf1EdxHtt;
        else
          e.edx &= ~kLeaf1EdxHtt;
        break;
      case 0xb:
      case 0x1f:
        e.edx = apic_id;  // x2APIC id
        break;
      default:
        break;
    }
  }
  return entries;
}

}  // namespace space::vmm::x86
