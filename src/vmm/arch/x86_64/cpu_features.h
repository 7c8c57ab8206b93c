// The CPU features a snapshot's guest was given (CPUID leaf 1 ECX/EDX, leaf 7 subleaf 0
// EBX/ECX/EDX) and whether a host can give them again. A guest kernel that saw a feature keeps
// using it after a restore, so a snapshot may only be restored where KVM supports every such bit.
// Bits the VMM sets itself (hypervisor, HTT) or that KVM derives at run time from guest control
// registers (OSXSAVE, OSPKE) are not requirements. Pure functions, unit-tested.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "util/field_list.h"
#include "vmm/kvm_api.h"

namespace space::vmm::x86 {

struct CpuFeatures {
  uint32_t leaf1_ecx = 0, leaf1_edx = 0;
  uint32_t leaf7_ebx = 0, leaf7_ecx = 0, leaf7_edx = 0;
  bool operator==(const CpuFeatures&) const = default;
  // proto/fields.h: a snapshot's "cpu" section
  SPACE_FIELDS(leaf1_ecx, leaf1_edx, leaf7_ebx, leaf7_ecx, leaf7_edx);
};

// The feature words of a CPUID table (missing leaves count as zero).
CpuFeatures cpu_features_of(std::span<const kvm_cpuid_entry2> entries);
// Names of the features `need` has and `have` lacks ("avx2", "cpuid.7.ecx bit 13"), in a fixed
// order; empty when `have` covers `need`.
std::vector<std::string> missing_cpu_features(const CpuFeatures& need, const CpuFeatures& have);

}  // namespace space::vmm::x86
