// Machine: one assembled VM. It owns the KVM VM, guest memory, the devices and the buses, the
// vCPUs, and the order they are built in: memory slot first (registering it after the irqchip
// waits for an RCU grace period), then irqchip, PIT and vCPUs. boot() loads the kernel and sets
// every vCPU to the 64-bit entry state; restore() instead sets every vCPU, the irqchip, PIT,
// clock and devices from a snapshot (with RAM already mapped from its memory file); start() runs
// the vCPU threads; the first VM exit (guest reset, fault or error) is recorded and wakes the
// event loop through `on_exit`. Its disks: vda, the root filesystem; vdb, the slot for a user
// image, always present (so one template serves sandboxes with and without an image) and empty
// unless spec.image_disk names one. pause() parks every vCPU so capture() reads a consistent state.
// On PVM hosts the machine also has a VectorStateKeeper (vmm/arch/x86_64/vector_state.h), set up
// by start() from the vCPUs' CPUID, which keeps guest tasks' AVX state for the guest kernel.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "devices/device.h"
#include "devices/virtio/backend.h"
#include "devices/virtio/vsock_route.h"
#include "memory/guest_memory.h"
#include "util/event_loop.h"
#include "util/phase_log.h"
#include "vmm/arch/x86_64/vector_state.h"
#include "vmm/bus.h"
#include "vmm/host.h"
#include "vmm/kvm.h"
#include "vmm/snapshot.h"
#include "vmm/vcpu.h"

namespace space::devices {
class VirtioBlock;
class VirtioMmio;
class VirtioVsock;
}  // namespace space::devices

namespace space::vmm {

struct MachineSpec {
  std::string id;
  uint32_t vcpus = 1;
  uint64_t memory_bytes = 256ULL << 20;
  std::string kernel;         // ELF vmlinux
  std::string initrd;         // optional
  std::string rootfs;         // ext4 image for /dev/vda
  std::string image_disk;     // ext4 image for /dev/vdb, the user image; "" = no medium
  std::string cmdline_extra;  // appended to the generated command line
  std::string vsock_uds;      // host side of virtio-vsock (vsock.sock)
  std::map<uint32_t, devices::VsockHostRoute> vsock_routes;  // guest->host ports served elsewhere
  uint64_t guest_cid = 3;
  int console_fd = -1;  // serial output (not owned)
  HostKind host = HostKind::Unknown;
  PhaseLog* phases = nullptr;  // optional: construction phases are marked here
  // Run first on every vCPU thread, before its first KVM_RUN (the jail's per-thread seccomp
  // filter); if it throws, the VM ends with that error.
  std::function<void()> vcpu_thread_setup;
};

// The files a machine uses, already open: a jailed VMM opens nothing by path. Each one left
// invalid is opened from MachineSpec instead (kvm: /dev/kvm; image: none when its path is "" too;
// vsock_listener: bound at spec.vsock_uds).
struct MachineFiles {
  Fd kvm, rootfs, image, kernel, vsock_listener;
};

class Machine {
 public:
  // Builds the VM and its devices over fresh anonymous RAM; throws Error (with context).
  Machine(const MachineSpec& spec, EventLoop& loop, std::function<void()> on_exit);
  // Same over `memory` (spec.memory_bytes is ignored): a restore passes the mapped memory file.
  Machine(const MachineSpec& spec, memory::GuestMemory memory, EventLoop& loop,
          std::function<void()> on_exit);
  // Same with the files already open.
  Machine(const MachineSpec& spec, MachineFiles files, memory::GuestMemory memory, EventLoop& loop,
          std::function<void()> on_exit);
  ~Machine();

  // Loads the kernel (and initrd), writes the boot structures and sets every vCPU's registers.
  void boot();
  // Instead of boot(): checks the host can run `snap` (vCPU count, devices, CPU features) and
  // sets all of its vCPU, VM and device state, then resets vsock connections and, when the
  // image slot has a medium, raises its configuration-change interrupt so that the guest reads
  // the new capacity. Marks phases in spec.phases. Throws Error before any vCPU runs.
  void restore(const snapshot::Snapshot& snap);
  // Starts every vCPU thread.
  void start();
  // Stops and joins every vCPU thread (idempotent).
  void stop();
  // Parks every vCPU outside KVM_RUN and returns how long that took. If one does not park
  // within `timeout`, resumes the others and throws. No-op when already paused.
  std::chrono::microseconds pause(
      std::chrono::milliseconds timeout = std::chrono::milliseconds(1000));
  // Releases parked vCPUs (no-op when not paused).
  void resume();
  bool paused() const { return paused_.load(); }
  // Everything a snapshot holds except RAM; requires paused().
  snapshot::Snapshot capture();
  // The guest's kvmclock (ns since its boot, carried through snapshots: its uptime) and the
  // vsock connections begun so far (devices/virtio/vsock.h).
  struct Stats {
    uint64_t guest_clock_ns = 0;
    uint64_t host_connections = 0, guest_connections = 0;
    // vsock connections open now: read on the event loop's thread only.
    uint64_t open_connections = 0;
  };
  Stats stats() const;
  // fdatasync of every disk image, so a copy taken now matches what the guest wrote.
  void sync_disks();
  // The first exit recorded, once the guest has stopped.
  std::optional<VmExit> exit_reason() const;
  // The full kernel command line (after boot()).
  const std::string& cmdline() const { return cmdline_; }
  // How many vCPUs it has.
  uint32_t vcpu_count() const { return static_cast<uint32_t>(vcpus_.size()); }
  // The sandbox id this machine was built for.
  const std::string& id() const { return spec_.id; }
  const memory::GuestMemory& memory() const { return mem_; }
  // The open /dev/kvm (a branch child builds its VM with it).
  int kvm_fd() const { return kvm_.fd(); }

 private:
  class KvmIrq;
  void record_exit(const VmExit& e);
  void mark(const char* phase) const;
  // Wraps `backend` in a virtio-mmio transport at the next MMIO window and IRQ.
  devices::VirtioMmio* add_virtio(const std::string& name,
                                  std::unique_ptr<devices::VirtioBackend> backend);
  std::string build_cmdline() const;
  void setup_vcpu(Vcpu& v, uint64_t entry, const std::vector<kvm_cpuid_entry2>& supported);
  void check_restorable(const snapshot::Snapshot& snap) const;

  MachineSpec spec_;
  Fd kernel_fd_;  // MachineFiles::kernel, for boot()
  EventLoop& loop_;
  std::function<void()> on_exit_;
  Kvm kvm_;
  memory::GuestMemory mem_;
  Vm vm_;
  Bus pio_, mmio_;
  std::vector<std::unique_ptr<KvmIrq>> irqs_;
  std::vector<std::unique_ptr<devices::Device>> devices_;
  std::vector<std::string> virtio_cmdline_;
  std::unique_ptr<x86::VectorStateKeeper> vector_;  // PVM hosts only; outlives vcpus_
  std::vector<std::unique_ptr<Vcpu>> vcpus_;
  std::vector<std::vector<kvm_cpuid_entry2>> vcpu_cpuid_;  // what KVM_SET_CPUID2 got, per vCPU
  std::vector<uint32_t> msrs_;  // readable MSRs, found at the first capture()
  devices::VirtioMmio* vsock_dev_ = nullptr;
  devices::VirtioVsock* vsock_ = nullptr;
  std::vector<std::pair<devices::VirtioMmio*, devices::VirtioBlock*>> disks_;  // vda, vdb
  std::atomic<bool> paused_{false};
  std::string cmdline_;
  mutable std::mutex exit_mu_;
  std::optional<VmExit> exit_;
};

}  // namespace space::vmm
