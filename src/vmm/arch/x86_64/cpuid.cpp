// CPUID filter; see cpuid.h.
#include "vmm/arch/x86_64/cpuid.h"

namespace space::vmm::x86 {
namespace {
constexpr uint32_t kLeaf1EcxCx16 = 1u << 13;
constexpr uint32_t kLeaf1EcxHypervisor = 1u << 31;
constexpr uint32_t kLeaf1EdxHtt = 1u << 28;
// KVM's paravirtual features (leaf 0x40000001, EAX) whose guest side is a VMCALL/VMMCALL:
// PV_UNHALT (KVM_HC_KICK_CPU), PV_SEND_IPI (KVM_HC_SEND_IPI), PV_SCHED_YIELD (KVM_HC_SCHED_YIELD).
// PVM interprets guest ring 0 and never completes a hypercall there: the vCPU spins on the
// instruction (rewritten between vmcall and vmmcall) and never exits. With two vCPUs, the
// application processor's first PV IPI hung the guest at "x86: Booting SMP configuration".
constexpr uint32_t kKvmFeaturesLeaf = 0x40000001;
constexpr uint32_t kKvmHypercallFeatures = (1u << 7) | (1u << 11) | (1u << 13);
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
      case kKvmFeaturesLeaf:
        if (p.pvm_host) e.eax &= ~kKvmHypercallFeatures;
        break;
      default:
        break;
    }
  }
  return entries;
}

}  // namespace space::vmm::x86
