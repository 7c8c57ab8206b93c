// Bus: routes a guest port-I/O or MMIO access to the device that claimed the address range,
// with the offset from the range's base, holding the device's mutex for the call. One Bus for
// PIO and one for MMIO. Ranges are registered before vCPUs start and never change afterwards,
// so lookups need no lock. Accesses to unclaimed addresses read as all-ones and are dropped.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "devices/device.h"

namespace space::vmm {

class Bus {
 public:
  // Claims [base, base+len) for `dev` (not owned; must outlive the bus). Throws on overlap.
  void add(uint64_t base, uint64_t len, devices::Device* dev);
  // Dispatches a read; returns false (data filled with 0xff) when no device claims `addr`.
  bool read(uint64_t addr, std::span<uint8_t> data) const;
  // Dispatches a write; returns false when no device claims `addr`.
  bool write(uint64_t addr, std::span<const uint8_t> data) const;

 private:
  struct Range {
    uint64_t base, len;
    devices::Device* dev;
  };
  const Range* find(uint64_t addr, uint64_t len) const;
  std::vector<Range> ranges_;
};

}  // namespace space::vmm
