// The CPUID a vCPU sees: KVM's supported CPUID (the host's, as KVM can virtualise it) with the
// per-vCPU APIC ids, the hypervisor bit, and host-specific masks (on PVM hosts cx16, whose
// ring-0 emulation is missing, and the KVM paravirtual features that use hypercalls, which PVM
// never completes: PV IPIs, PV sched yield, PV unhalt; the guest falls back to the APIC). Pure
// function of its inputs, so it is unit-tested.
#pragma once
#include <cstdint>
#include <vector>

#include "vmm/kvm_api.h"

namespace space::vmm::x86 {

struct CpuidPolicy {
  int vcpu_index = 0;
  int vcpu_count = 1;
  bool pvm_host = false;  // mask what PVM cannot emulate in guest ring 0
};

// Returns the filtered CPUID entries for one vCPU.
std::vector<kvm_cpuid_entry2> filter_cpuid(std::vector<kvm_cpuid_entry2> entries,
                                           const CpuidPolicy& policy);

}  // namespace space::vmm::x86
