// Helpers for the tests of devices driven through their registers (serial, i8042, the bus): an
// IrqLine that records every level it is set to, and one-byte register reads and writes.
#pragma once
#include <cstdint>
#include <vector>

#include "devices/device.h"

namespace space::test {

struct FakeIrq : devices::IrqLine {
  std::vector<bool> levels;
  void set_level(bool l) override { levels.push_back(l); }
  bool high() const { return !levels.empty() && levels.back(); }
};

inline uint8_t rd(devices::Device& d, uint64_t off) {
  uint8_t v = 0;
  d.read(off, {&v, 1});
  return v;
}

inline void wr(devices::Device& d, uint64_t off, uint8_t v) {
  d.write(off, {&v, 1});
}

}  // namespace space::test
