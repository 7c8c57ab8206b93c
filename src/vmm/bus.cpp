// Bus dispatch; see bus.h. A handful of devices, so a linear scan is the fastest lookup.
#include "vmm/bus.h"

#include <cstring>
#include <mutex>

#include "util/error.h"

namespace space::vmm {

void Bus::add(uint64_t base, uint64_t len, devices::Device* dev) {
  if (len == 0 || base + len < base) fail("bus range for " + dev->name() + " is invalid");
  for (auto& r : ranges_)
    if (base < r.base + r.len && r.base < base + len)
      fail("bus range for " + dev->name() + " overlaps " + r.dev->name());
  ranges_.push_back({base, len, dev});
}

const Bus::Range* Bus::find(uint64_t addr, uint64_t len) const {
  for (auto& r : ranges_)
    if (addr >= r.base && addr - r.base < r.len && len <= r.len - (addr - r.base)) return &r;
  return nullptr;
}

bool Bus::read(uint64_t addr, std::span<uint8_t> data) const {
  const Range* r = find(addr, data.size());
  if (!r) {
    std::memset(data.data(), 0xff, data.size());
    return false;
  }
  std::lock_guard lock(r->dev->mutex());
  r->dev->read(addr - r->base, data);
  return true;
}

bool Bus::write(uint64_t addr, std::span<const uint8_t> data) const {
  const Range* r = find(addr, data.size());
  if (!r) return false;
  std::lock_guard lock(r->dev->mutex());
  r->dev->write(addr - r->base, data);
  return true;
}

}  // namespace space::vmm
