// Machine: the pause barrier, and the snapshot half of the machine (capture while paused, restore
// into a freshly built machine); see machine.h. The restore order matters: vCPUs first (CPUID,
// registers, LAPIC, MSRs), then the irqchip, PIT and clock, then device state under each
// device's mutex, and only then the vsock transport reset, whose event raises an interrupt
// through the restored irqchip.
#include <sys/ioctl.h>

#include "devices/virtio/block.h"
#include "devices/virtio/mmio.h"
#include "devices/virtio/vsock.h"
#include "util/error.h"
#include "util/log.h"
#include "vmm/arch/x86_64/cpu_features.h"
#include "vmm/arch/x86_64/vcpu_state.h"
#include "vmm/arch/x86_64/vm_state.h"
#include "vmm/machine.h"

namespace space::vmm {

std::chrono::microseconds Machine::pause(std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  if (paused_.load()) return {};
  auto t0 = Clock::now();
  for (auto& v : vcpus_) v->request_pause();
  auto deadline = t0 + timeout;
  for (auto& v : vcpus_) {
    if (!v->wait_parked(deadline)) {
      for (auto& u : vcpus_) u->resume();
      fail("pause: vCPU " + std::to_string(v->fd().index()) + " did not stop within " +
           std::to_string(timeout.count()) + " ms");
    }
  }
  paused_.store(true);
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0);
}

void Machine::resume() {
  if (!paused_.load()) return;
  for (auto& v : vcpus_) {
    // Tell a kvmclock guest it was stopped, so its watchdogs discount the pause. Guests without
    // kvmclock refuse (EINVAL); that is fine.
    (void)::ioctl(v->fd().fd(), KVM_KVMCLOCK_CTRL, 0);
    v->resume();
  }
  paused_.store(false);
}

snapshot::Snapshot Machine::capture() {
  if (!paused_.load()) fail("snapshot: the VM must be paused first");
  snapshot::Snapshot s;
  s.machine.vcpus = static_cast<uint32_t>(vcpus_.size());
  s.machine.memory_bytes = mem_.size();
  s.machine.cmdline = cmdline_;
  for (const auto& d : devices_) s.machine.devices.push_back(d->name());
  if (vcpu_cpuid_.empty() || vcpu_cpuid_[0].empty()) fail("snapshot: the VM was never started");
  s.cpu = x86::cpu_features_of(vcpu_cpuid_[0]);
  if (msrs_.empty()) msrs_ = x86::readable_msrs(vcpus_[0]->fd(), kvm_.msr_index_list());
  auto caps = x86::vcpu_state_caps(vm_);
  for (size_t i = 0; i < vcpus_.size(); i++)
    s.vcpus.push_back(x86::capture_vcpu(vcpus_[i]->fd(), caps, msrs_, vcpu_cpuid_[i]));
  s.vm = x86::capture_vm(vm_);
  for (const auto& d : devices_) {
    std::lock_guard lk(d->mutex());
    s.devices.push_back({d->name(), d->save()});
  }
  return s;
}

void Machine::sync_disks() {
  for (auto& [dev, blk] : disks_) {
    std::lock_guard lk(dev->mutex());
    blk->sync();
  }
}

void Machine::check_restorable(const snapshot::Snapshot& snap) const {
  if (snap.machine.vcpus != vcpus_.size())
    fail("the snapshot has " + std::to_string(snap.machine.vcpus) + " vCPUs, this machine " +
         std::to_string(vcpus_.size()));
  if (snap.machine.memory_bytes != mem_.size())
    fail("the snapshot has " + std::to_string(snap.machine.memory_bytes) +
         " bytes of RAM, this machine " + std::to_string(mem_.size()));
  std::vector<std::string> names;
  for (const auto& d : devices_) names.push_back(d->name());
  if (names != snap.machine.devices) {
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& n : v) s += (s.empty() ? "" : ", ") + n;
      return s;
    };
    throw Error("the snapshot's devices (" + join(snap.machine.devices) +
                    ") differ from this VMM's (" + join(names) + ")",
                0, snapshot::rebuild_hint());
  }
  auto missing = x86::missing_cpu_features(snap.cpu, x86::cpu_features_of(kvm_.supported_cpuid()));
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    throw Error("this host lacks CPU features the snapshot's guest uses: " + list, 0,
                "restore it on a host with the same CPU, or rebuild the template on this one");
  }
}

void Machine::restore(const snapshot::Snapshot& snap) {
  check_restorable(snap);
  mark("host check");
  const size_t xsave_size = x86::vcpu_state_caps(vm_).xsave_size;
  for (size_t i = 0; i < vcpus_.size(); i++) {
    x86::apply_vcpu(vcpus_[i]->fd(), snap.vcpus[i], xsave_size);
    vcpu_cpuid_[i] = snap.vcpus[i].cpuid;
  }
  mark("vcpu state");
  x86::apply_vm(vm_, snap.vm);
  mark("vm state");
  for (size_t i = 0; i < devices_.size(); i++) {
    std::lock_guard lk(devices_[i]->mutex());
    devices_[i]->restore(snap.devices[i].data);
  }
  if (vsock_dev_) {
    std::lock_guard lk(vsock_dev_->mutex());
    vsock_->reset_transport();
  }
  // The guest last saw the image slot as the snapshot left it (empty, for a template): have it
  // read the capacity again. Harmless when the medium is the one it already knew.
  if (auto [dev, blk] = disks_.back(); blk->has_medium()) {
    std::lock_guard lk(dev->mutex());
    dev->config_changed();
  }
  cmdline_ = snap.machine.cmdline;
  mark("device state");
}

}  // namespace space::vmm
