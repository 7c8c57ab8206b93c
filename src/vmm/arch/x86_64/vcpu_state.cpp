// vCPU state capture, restore and encoding; see vcpu_state.h.
#include "vmm/arch/x86_64/vcpu_state.h"

#include <sys/ioctl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/error.h"

namespace space::vmm::x86 {
namespace {

std::string hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%x", v);
  return b;
}

// A kvm_msrs with room for `n` entries.
struct MsrBuffer {
  explicit MsrBuffer(size_t n) : buf(sizeof(kvm_msrs) + n * sizeof(kvm_msr_entry)) {
    get()->nmsrs = static_cast<uint32_t>(n);
  }
  kvm_msrs* get() { return reinterpret_cast<kvm_msrs*>(buf.data()); }
  std::vector<uint8_t> buf;
};

// KVM_GET_MSRS for `indices`; returns how many were read (KVM stops at the first failure).
size_t get_msrs(const VcpuFd& fd, std::span<const uint32_t> indices,
                std::vector<kvm_msr_entry>& out) {
  MsrBuffer b(indices.size());
  for (size_t i = 0; i < indices.size(); i++) b.get()->entries[i].index = indices[i];
  int n = ::ioctl(fd.fd(), KVM_GET_MSRS, b.get());
  if (n < 0) throw_errno("KVM_GET_MSRS (vcpu " + std::to_string(fd.index()) + ")");
  out.assign(b.get()->entries, b.get()->entries + n);
  return static_cast<size_t>(n);
}

void set_msrs(const VcpuFd& fd, std::span<const kvm_msr_entry> msrs) {
  if (msrs.empty()) return;
  MsrBuffer b(msrs.size());
  std::memcpy(b.get()->entries, msrs.data(), msrs.size() * sizeof(kvm_msr_entry));
  int n = ::ioctl(fd.fd(), KVM_SET_MSRS, b.get());
  if (n < 0) throw_errno("KVM_SET_MSRS (vcpu " + std::to_string(fd.index()) + ")");
  if (static_cast<size_t>(n) != msrs.size())
    fail("KVM_SET_MSRS (vcpu " + std::to_string(fd.index()) + "): this host refused MSR " +
         hex(msrs[static_cast<size_t>(n)].index));
}

}  // namespace

VcpuStateCaps vcpu_state_caps(const Vm& vm) {
  VcpuStateCaps c;
  if (vm.check_extension(KVM_CAP_XSAVE)) {
    int sz = vm.check_extension(KVM_CAP_XSAVE2);
    c.xsave_size = std::max<size_t>(sizeof(kvm_xsave), sz > 0 ? static_cast<size_t>(sz) : 0);
  }
  c.xcrs = vm.check_extension(KVM_CAP_XCRS) != 0;
  return c;
}

void set_cpuid(const VcpuFd& fd, std::span<const kvm_cpuid_entry2> entries) {
  std::vector<uint8_t> buf(sizeof(kvm_cpuid2) + entries.size() * sizeof(kvm_cpuid_entry2));
  auto* c = reinterpret_cast<kvm_cpuid2*>(buf.data());
  c->nent = static_cast<uint32_t>(entries.size());
  std::memcpy(c->entries, entries.data(), entries.size() * sizeof(kvm_cpuid_entry2));
  fd.ioctl_or_throw(KVM_SET_CPUID2, c, "KVM_SET_CPUID2");
}

std::vector<uint32_t> readable_msrs(const VcpuFd& fd, std::vector<uint32_t> candidates) {
  std::vector<uint32_t> ok;
  std::vector<kvm_msr_entry> got;
  size_t pos = 0;
  while (pos < candidates.size()) {
    size_t n = get_msrs(fd, std::span(candidates).subspan(pos), got);
    ok.insert(ok.end(), candidates.begin() + static_cast<ptrdiff_t>(pos),
              candidates.begin() + static_cast<ptrdiff_t>(pos + n));
    pos += n + 1;  // skip the one KVM could not read
  }
  return ok;
}

VcpuState capture_vcpu(const VcpuFd& fd, const VcpuStateCaps& caps,
                       std::span<const uint32_t> msr_indices, std::vector<kvm_cpuid_entry2> cpuid) {
  VcpuState s;
  fd.ioctl_or_throw(KVM_GET_REGS, &s.regs, "KVM_GET_REGS");
  fd.ioctl_or_throw(KVM_GET_SREGS, &s.sregs, "KVM_GET_SREGS");
  fd.ioctl_or_throw(KVM_GET_FPU, &s.fpu, "KVM_GET_FPU");
  if (caps.xsave_size > 0) {
    s.xsave.assign(caps.xsave_size, 0);
    if (caps.xsave_size > sizeof(kvm_xsave))
      fd.ioctl_or_throw(KVM_GET_XSAVE2, s.xsave.data(), "KVM_GET_XSAVE2");
    else
      fd.ioctl_or_throw(KVM_GET_XSAVE, s.xsave.data(), "KVM_GET_XSAVE");
  }
  if (caps.xcrs) {
    fd.ioctl_or_throw(KVM_GET_XCRS, &s.xcrs, "KVM_GET_XCRS");
    s.has_xcrs = true;
  }
  fd.ioctl_or_throw(KVM_GET_LAPIC, &s.lapic, "KVM_GET_LAPIC");
  if (get_msrs(fd, msr_indices, s.msrs) != msr_indices.size())
    fail("KVM_GET_MSRS (vcpu " + std::to_string(fd.index()) + "): could not read MSR " +
         hex(msr_indices[s.msrs.size()]));
  fd.ioctl_or_throw(KVM_GET_MP_STATE, &s.mp_state, "KVM_GET_MP_STATE");
  fd.ioctl_or_throw(KVM_GET_VCPU_EVENTS, &s.events, "KVM_GET_VCPU_EVENTS");
  fd.ioctl_or_throw(KVM_GET_DEBUGREGS, &s.debugregs, "KVM_GET_DEBUGREGS");
  s.cpuid = std::move(cpuid);
  return s;
}

void apply_vcpu(const VcpuFd& fd, const VcpuState& s, size_t xsave_size) {
  set_cpuid(fd, s.cpuid);
  kvm_sregs sregs = s.sregs;
  fd.ioctl_or_throw(KVM_SET_SREGS, &sregs, "KVM_SET_SREGS");
  kvm_regs regs = s.regs;
  fd.ioctl_or_throw(KVM_SET_REGS, &regs, "KVM_SET_REGS");
  kvm_fpu fpu = s.fpu;
  fd.ioctl_or_throw(KVM_SET_FPU, &fpu, "KVM_SET_FPU");
  if (!s.xsave.empty()) {
    if (xsave_size == 0)
      fail("the snapshot holds XSAVE state but this host's KVM has no XSAVE API");
    std::vector<uint8_t> img(std::max(xsave_size, s.xsave.size()), 0);
    std::memcpy(img.data(), s.xsave.data(), s.xsave.size());
    fd.ioctl_or_throw(KVM_SET_XSAVE, img.data(), "KVM_SET_XSAVE");
  }
  if (s.has_xcrs) {
    kvm_xcrs xcrs = s.xcrs;
    fd.ioctl_or_throw(KVM_SET_XCRS, &xcrs, "KVM_SET_XCRS");
  }
  kvm_mp_state mp = s.mp_state;
  fd.ioctl_or_throw(KVM_SET_MP_STATE, &mp, "KVM_SET_MP_STATE");
  kvm_lapic_state lapic = s.lapic;
  fd.ioctl_or_throw(KVM_SET_LAPIC, &lapic, "KVM_SET_LAPIC");
  set_msrs(fd, s.msrs);
  kvm_vcpu_events ev = s.events;
  ev.flags |= KVM_VCPUEVENT_VALID_NMI_PENDING | KVM_VCPUEVENT_VALID_SIPI_VECTOR;
  ev.flags &=
      ~static_cast<uint32_t>(KVM_VCPUEVENT_VALID_PAYLOAD | KVM_VCPUEVENT_VALID_TRIPLE_FAULT);
  fd.ioctl_or_throw(KVM_SET_VCPU_EVENTS, &ev, "KVM_SET_VCPU_EVENTS");
  kvm_debugregs dr = s.debugregs;
  dr.flags = 0;
  fd.ioctl_or_throw(KVM_SET_DEBUGREGS, &dr, "KVM_SET_DEBUGREGS");
}

void VcpuState::check() const {
  if (!xsave.empty() && xsave.size() < sizeof(kvm_xsave))
    throw proto::ProtoError("xsave: bad size " + std::to_string(xsave.size()));
  if (xcrs.nr_xcrs > KVM_MAX_XCRS) throw proto::ProtoError("xcrs: bad count");
  if (cpuid.empty()) throw proto::ProtoError("cpuid: no entries");
}

}  // namespace space::vmm::x86
