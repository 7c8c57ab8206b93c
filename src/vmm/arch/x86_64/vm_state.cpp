// VM-wide state capture, restore and encoding; see vm_state.h.
#include "vmm/arch/x86_64/vm_state.h"

namespace space::vmm::x86 {
namespace {

kvm_irqchip get_chip(const Vm& vm, uint32_t id, const char* what) {
  kvm_irqchip c{};
  c.chip_id = id;
  vm.ioctl_or_throw(KVM_GET_IRQCHIP, &c, what);
  return c;
}

void check_chip(const kvm_irqchip& c, uint32_t id, const char* what) {
  if (c.chip_id != id) throw proto::ProtoError(std::string(what) + ": wrong chip id");
}

}  // namespace

VmState capture_vm(const Vm& vm) {
  VmState s;
  s.pic_master = get_chip(vm, KVM_IRQCHIP_PIC_MASTER, "KVM_GET_IRQCHIP (PIC master)");
  s.pic_slave = get_chip(vm, KVM_IRQCHIP_PIC_SLAVE, "KVM_GET_IRQCHIP (PIC slave)");
  s.ioapic = get_chip(vm, KVM_IRQCHIP_IOAPIC, "KVM_GET_IRQCHIP (IOAPIC)");
  vm.ioctl_or_throw(KVM_GET_PIT2, &s.pit, "KVM_GET_PIT2");
  kvm_clock_data clock{};
  vm.ioctl_or_throw(KVM_GET_CLOCK, &clock, "KVM_GET_CLOCK");
  s.clock = clock.clock;
  return s;
}

void apply_vm(const Vm& vm, const VmState& s) {
  kvm_irqchip c = s.pic_master;
  vm.ioctl_or_throw(KVM_SET_IRQCHIP, &c, "KVM_SET_IRQCHIP (PIC master)");
  c = s.pic_slave;
  vm.ioctl_or_throw(KVM_SET_IRQCHIP, &c, "KVM_SET_IRQCHIP (PIC slave)");
  c = s.ioapic;
  vm.ioctl_or_throw(KVM_SET_IRQCHIP, &c, "KVM_SET_IRQCHIP (IOAPIC)");
  kvm_pit_state2 pit = s.pit;
  vm.ioctl_or_throw(KVM_SET_PIT2, &pit, "KVM_SET_PIT2");
  kvm_clock_data clock{};
  clock.clock = s.clock;
  vm.ioctl_or_throw(KVM_SET_CLOCK, &clock, "KVM_SET_CLOCK");
}

void VmState::check() const {
  check_chip(pic_master, KVM_IRQCHIP_PIC_MASTER, "PIC master");
  check_chip(pic_slave, KVM_IRQCHIP_PIC_SLAVE, "PIC slave");
  check_chip(ioapic, KVM_IRQCHIP_IOAPIC, "IOAPIC");
}

}  // namespace space::vmm::x86
