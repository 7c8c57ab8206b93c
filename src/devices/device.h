// The one interface every emulated device implements. The VMM's bus routes a guest MMIO or port
// access to the device that claimed the address, with the offset from the device's base. Calls
// come from vCPU threads and (for devices with host-side I/O) the event loop thread; the bus holds
// the device's mutex() around every read/write, and a device's own event-loop handlers take the
// same mutex, so device code is single-threaded. save()/restore() turn the device's guest-visible
// state into plain bytes and back, for snapshots; they are called only while every vCPU is parked.
#pragma once
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace space::devices {

class Device {
 public:
  virtual ~Device() = default;
  // Short stable name, used in logs and as the snapshot section key ("serial", "virtio-blk0").
  virtual std::string name() const = 0;
  // Guest read of `data.size()` bytes (1, 2, 4 or 8) at `offset` from the device base.
  virtual void read(uint64_t offset, std::span<uint8_t> data) = 0;
  // Guest write of `data.size()` bytes at `offset` from the device base.
  virtual void write(uint64_t offset, std::span<const uint8_t> data) = 0;
  // Guest-visible state as plain bytes.
  virtual std::vector<uint8_t> save() const = 0;
  // Inverse of save(); throws space::Error on malformed data.
  virtual void restore(std::span<const uint8_t> state) = 0;

  std::mutex& mutex() { return mu_; }

 private:
  std::mutex mu_;
};

// An interrupt line into the guest's interrupt controller. The VMM implements it with
// KVM_IRQ_LINE (or an irqfd); unit tests use a recording fake.
class IrqLine {
 public:
  virtual ~IrqLine() = default;
  // Drives the line to `level` (level-triggered semantics).
  virtual void set_level(bool level) = 0;
  // Raises then lowers the line: one edge.
  void pulse() {
    set_level(true);
    set_level(false);
  }
};

}  // namespace space::devices
