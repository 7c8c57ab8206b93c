// VirtioMmio: the virtio-mmio transport (register layout version 2, modern only) as a Device
// occupying a 4 KiB MMIO window, hosting one VirtioBackend. It owns the registers, feature
// negotiation (VIRTIO_F_VERSION_1 is required: FEATURES_OK is refused without it), the status
// state machine, the virtqueues and the interrupt: a used-buffer or config-change event sets
// InterruptStatus bit 0 or 1 and pulses the IrqLine (edge; the guest acks via InterruptACK).
// Threading: every entry point expects the caller to hold Device::mutex(), which is also what the
// backend gets as device_mutex(): vCPU threads hold it around read/write (the bus does), the
// backend's EventLoop handlers take it themselves, and the VMM holds it around save/restore and
// any direct backend call. save()/restore() cover registers, queues and backend state as
// versioned plain bytes (State's field list); restore() refuses a state whose negotiated driver
// features (FEATURES_OK set) are not a subset of what the device offers (a template saved by a
// build with other features).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "devices/device.h"
#include "devices/virtio/backend.h"
#include "devices/virtio/queue.h"
#include "proto/fields.h"
#include "util/log.h"

namespace space::devices {

class VirtioMmio final : public Device, private VirtioTransport {
 public:
  static constexpr uint64_t kWindowSize = 0x1000;
  static constexpr uint32_t kMagic = 0x74726976;     // "virt"
  static constexpr uint32_t kVendorId = 0x63617073;  // "spac"

  // A transport named `name` (the snapshot key) over `mem`, raising `irq`; both must outlive it.
  // Calls backend->attach(*this).
  VirtioMmio(std::string name, const memory::GuestMemory& mem, IrqLine& irq,
             std::unique_ptr<VirtioBackend> backend);

  std::string name() const override { return name_; }
  void read(uint64_t offset, std::span<uint8_t> data) override;
  void write(uint64_t offset, std::span<const uint8_t> data) override;
  std::vector<uint8_t> save() const override;
  // Restores a save(); the backend is reset first and re-activated if the driver had DRIVER_OK.
  void restore(std::span<const uint8_t> state) override;

  VirtioBackend& backend() { return *backend_; }
  // Current Status register (tests and diagnostics).
  uint32_t status() const { return status_; }
  uint32_t interrupt_status() const { return interrupt_status_; }
  // The backend's configuration changed (a disk got its medium after a restore): raises the
  // configuration-change interrupt if the driver runs the device. Requires mutex() held.
  void config_changed() {
    if (running()) signal_config();
  }

  // What save() keeps.
  struct State {
    static constexpr uint32_t kMagic = 0x4f494d56;  // "VMIO"
    static constexpr uint32_t kVersion = 1;
    static constexpr size_t kMaxQueues = 64;
    uint32_t magic = kMagic, version = kVersion;
    uint32_t device_id = 0;
    uint32_t status = 0;
    uint64_t driver_features = 0;
    uint32_t device_features_sel = 0, driver_features_sel = 0, queue_sel = 0;
    uint32_t interrupt_status = 0, config_generation = 0;
    std::vector<VirtqueueState> queues;
    std::vector<uint8_t> backend;  // VirtioBackend::save_state()
    SPACE_FIELDS(magic, version, device_id, status, driver_features, device_features_sel,
                 driver_features_sel, queue_sel, interrupt_status, config_generation,
                 (queues, proto::Max{kMaxQueues}), backend);
  };

 private:
  mutable log::Throttle warn_;  // what the guest provokes is rate-limited
  // VirtioTransport
  std::mutex& device_mutex() override { return Device::mutex(); }
  const memory::GuestMemory& memory() const override { return mem_; }
  Virtqueue& queue(size_t index) override { return queues_.at(index); }
  uint64_t driver_features() const override { return driver_features_; }
  void signal_used(size_t queue) override;
  void signal_config() override;
  void fail(std::string_view why) override;
  bool running() const override;

  uint32_t read_reg(uint64_t offset);
  void write_reg(uint64_t offset, uint32_t value);
  void write_status(uint32_t value);
  void reset_device();
  Virtqueue* selected_queue();

  std::string name_;
  const memory::GuestMemory& mem_;
  IrqLine& irq_;
  std::unique_ptr<VirtioBackend> backend_;
  std::vector<Virtqueue> queues_;
  uint64_t device_features_;
  uint64_t driver_features_ = 0;
  uint32_t device_features_sel_ = 0;
  uint32_t driver_features_sel_ = 0;
  uint32_t queue_sel_ = 0;
  uint32_t status_ = 0;
  uint32_t interrupt_status_ = 0;
  uint32_t config_generation_ = 0;
};

}  // namespace space::devices
