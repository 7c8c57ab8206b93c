// Unit tests for vmm/bus: accesses routed by address range to the claiming device, overlapping
// ranges refused, unclaimed addresses read as all-ones.
#include <doctest/doctest.h>

#include <cstdint>

#include "devices/i8042.h"
#include "devices/serial.h"
#include "support/device_io.h"
#include "util/error.h"
#include "vmm/bus.h"

using namespace space;
using space::test::FakeIrq;

TEST_CASE("bus routes by range, rejects overlaps, and ignores unclaimed addresses") {
  FakeIrq irq;
  devices::Serial s(irq, -1);
  devices::I8042 k(nullptr);
  vmm::Bus bus;
  bus.add(0x3f8, 8, &s);
  bus.add(0x60, 5, &k);
  CHECK_THROWS_AS(bus.add(0x3fc, 8, &k), Error);
  uint8_t v = 0x42;
  CHECK(bus.write(0x3ff, {&v, 1}));
  uint8_t r = 0;
  CHECK(bus.read(0x3ff, {&r, 1}));
  CHECK(r == 0x42);
  CHECK(!bus.read(0x1000, {&r, 1}));
  CHECK(r == 0xff);
  uint8_t wide[4];
  CHECK(!bus.read(0x3fe, {wide, 4}));  // straddles the end of the range
}
