// Machine: one assembled VM. It owns the KVM VM, guest memory, the devices and the buses, the
// vCPUs, and the order they are built in: memory slot first (registering it after the irqchip
// costs a 5-11 ms grace period), then irqchip, PIT and vCPUs. boot() loads the kernel and sets
// every vCPU to the 64-bit entry state; start() runs the vCPU threads; the first VM exit (guest
// reset, fault or error) is recorded and wakes the event loop through `on_exit`.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "devices/device.h"
#include "devices/virtio/backend.h"
#include "vmm/bus.h"
#include "vmm/event_loop.h"
#include "vmm/host.h"
#include "vmm/kvm.h"
#include "vmm/memory.h"
#include "vmm/vcpu.h"

namespace space {

struct MachineSpec {
  std::string id;
  uint32_t vcpus = 1;
  uint64_t memory_bytes = 256ULL << 20;
  std::string kernel;         // ELF vmlinux
  std::string initrd;         // optional
  std::string rootfs;         // ext4 image for /dev/vda
  std::string cmdline_extra;  // appended to the generated command line
  std::string vsock_uds;      // host side of virtio-vsock (vsock.sock)
  uint64_t guest_cid = 3;
  int console_fd = -1;        // serial output (not owned)
  HostKind host = HostKind::Unknown;
};

class Machine {
 public:
  // Builds the VM and its devices; throws Error (with context) on failure.
  Machine(const MachineSpec& spec, EventLoop& loop, std::function<void()> on_exit);
  ~Machine();

  // Loads the kernel (and initrd), writes the boot structures and sets every vCPU's registers.
  void boot();
  // Starts every vCPU thread.
  void start();
  // Stops and joins every vCPU thread (idempotent).
  void stop();
  // The first exit recorded, once the guest has stopped.
  std::optional<VmExit> exit_reason() const;
  // The full kernel command line (after boot()).
  const std::string& cmdline() const { return cmdline_; }
  const GuestMemory& memory() const { return mem_; }

 private:
  class KvmIrq;
  void record_exit(const VmExit& e);
  // Wraps `backend` in a virtio-mmio transport at the next MMIO window and IRQ.
  void add_virtio(const std::string& name, std::unique_ptr<VirtioBackend> backend);
  std::string build_cmdline() const;
  void setup_vcpu(Vcpu& v, uint64_t entry);

  MachineSpec spec_;
  EventLoop& loop_;
  std::function<void()> on_exit_;
  Kvm kvm_;
  GuestMemory mem_;
  Vm vm_;
  Bus pio_, mmio_;
  std::vector<std::unique_ptr<KvmIrq>> irqs_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<std::string> virtio_cmdline_;
  std::vector<std::unique_ptr<Vcpu>> vcpus_;
  std::vector<kvm_cpuid_entry2> cpuid_;
  std::string cmdline_;
  mutable std::mutex exit_mu_;
  std::optional<VmExit> exit_;
};

}  // namespace space
