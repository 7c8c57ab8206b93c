// VM-wide x86 state outside the vCPUs: the in-kernel irqchip (PIC master, PIC slave, IOAPIC),
// the i8254 PIT and the kvmclock. Captured while every vCPU is parked, applied to a fresh VM
// after its vCPUs are restored. The clock is set back to the saved kvmclock value (without
// KVM_CLOCK_REALTIME, so the guest's monotonic clock does not leap by the time the snapshot sat
// on disk; guest-init is told the wall time separately).
#pragma once
#include "proto/fields.h"
#include "vmm/kvm.h"
#include "vmm/kvm_api.h"

namespace space::vmm::x86 {

// A snapshot's "vm" section is this struct's field list (proto/fields.h).
struct VmState {
  kvm_irqchip pic_master{};
  kvm_irqchip pic_slave{};
  kvm_irqchip ioapic{};
  kvm_pit_state2 pit{};
  uint64_t clock = 0;  // kvmclock, ns
  SPACE_FIELDS((pic_master, proto::Blob{}), (pic_slave, proto::Blob{}), (ioapic, proto::Blob{}),
               (pit, proto::Blob{}), clock);
  void check() const;  // each chip is the one its field names
};

// Reads the state of `vm` (its vCPUs must be parked).
VmState capture_vm(const Vm& vm);
// Writes `s` into `vm` (irqchip and PIT already created).
void apply_vm(const Vm& vm, const VmState& s);

}  // namespace space::vmm::x86
