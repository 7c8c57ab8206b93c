// The complete architectural state of one x86 vCPU as KVM exposes it (registers, segment and
// control registers, FPU/XSAVE, XCRs, local APIC, MSRs, MP state, pending events, debug
// registers, CPUID), how to read it from a parked vCPU and write it into a fresh one, and its
// encoding inside a snapshot. The write order follows what KVM needs: CPUID first (it defines
// what the rest may contain), sregs (APIC base, EFER) before the LAPIC, the LAPIC before the MSRs
// (TSC_DEADLINE needs the LAPIC's timer mode), events last. Every ioctl failure throws naming it.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "proto/fields.h"
#include "proto/wire.h"
#include "vmm/kvm.h"
#include "vmm/kvm_api.h"

namespace space::vmm::x86 {

constexpr uint32_t kMaxMsrs = 1024;
constexpr uint32_t kMaxCpuid = 512;
constexpr size_t kMaxXsave = 1 << 20;

// A snapshot's "vcpu/<i>" section is this struct's field list (proto/fields.h): KVM's structs
// as blobs of their exact size, MSRs as (index, value) and CPUID entries field by field.
struct VcpuState {
  kvm_regs regs{};
  kvm_sregs sregs{};
  kvm_fpu fpu{};
  std::vector<uint8_t> xsave;  // KVM_GET_XSAVE(2) image; empty when the host has no XSAVE API
  kvm_xcrs xcrs{};
  bool has_xcrs = false;
  kvm_lapic_state lapic{};
  std::vector<kvm_msr_entry> msrs;
  kvm_mp_state mp_state{};
  kvm_vcpu_events events{};
  kvm_debugregs debugregs{};
  std::vector<kvm_cpuid_entry2> cpuid;
  SPACE_FIELDS((regs, proto::Blob{}), (sregs, proto::Blob{}), (fpu, proto::Blob{}),
               (xsave, proto::Max{kMaxXsave}), has_xcrs, (xcrs, proto::Blob{}),
               (lapic, proto::Blob{}), (msrs, proto::Max{kMaxMsrs}), (mp_state, proto::Blob{}),
               (events, proto::Blob{}), (debugregs, proto::Blob{}), (cpuid, proto::Max{kMaxCpuid}));
  void check() const;  // xsave's size, xcrs' count, at least one CPUID entry
};

// What the host's KVM offers for vCPU state beyond the basics.
struct VcpuStateCaps {
  size_t xsave_size = 0;  // bytes of an XSAVE image (0: no KVM_GET_XSAVE)
  bool xcrs = false;      // KVM_CAP_XCRS
};

// Queries `vm` for VcpuStateCaps (call after the vCPUs' CPUID is set: XSAVE2's size depends on it).
VcpuStateCaps vcpu_state_caps(const Vm& vm);
// KVM_SET_CPUID2 with `entries`.
void set_cpuid(const VcpuFd& fd, std::span<const kvm_cpuid_entry2> entries);
// The subset of `candidates` (KVM_GET_MSR_INDEX_LIST) that KVM_GET_MSRS can read on `fd`.
std::vector<uint32_t> readable_msrs(const VcpuFd& fd, std::vector<uint32_t> candidates);
// Reads the state of a vCPU that is not running; `cpuid` is what was set on it.
VcpuState capture_vcpu(const VcpuFd& fd, const VcpuStateCaps& caps,
                       std::span<const uint32_t> msr_indices, std::vector<kvm_cpuid_entry2> cpuid);
// Writes `s` into a vCPU that has never run. `xsave_size` is this host's XSAVE image size (the
// saved image is zero-padded to it).
void apply_vcpu(const VcpuFd& fd, const VcpuState& s, size_t xsave_size);

}  // namespace space::vmm::x86

namespace space::proto {

template <>
struct FieldList<kvm_msr_entry> {
  SPACE_FIELDS(index, data);
};

template <>
struct FieldList<kvm_cpuid_entry2> {
  SPACE_FIELDS(function, index, flags, eax, ebx, ecx, edx);
};

}  // namespace space::proto
