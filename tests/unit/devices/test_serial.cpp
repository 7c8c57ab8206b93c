// Unit tests for the bus and the legacy devices: 16550 serial (probe behaviour, THRE interrupt,
// output, save/restore) and i8042 (reset ends the VM).
#include <doctest/doctest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "devices/i8042.h"
#include "devices/serial.h"
#include "util/error.h"
#include "util/fd.h"
#include "vmm/bus.h"

using namespace space;
using namespace space::devices;
using namespace space::vmm;

namespace {
struct FakeIrq : devices::IrqLine {
  std::vector<bool> levels;
  void set_level(bool l) override { levels.push_back(l); }
  bool high() const { return !levels.empty() && levels.back(); }
};
uint8_t rd(devices::Device& d, uint64_t off) {
  uint8_t v = 0;
  d.read(off, {&v, 1});
  return v;
}
void wr(devices::Device& d, uint64_t off, uint8_t v) { d.write(off, {&v, 1}); }
}  // namespace

TEST_CASE("serial passes the 8250 driver's probe") {
  FakeIrq irq;
  devices::Serial s(irq, -1);
  wr(s, 1, 0);
  CHECK((rd(s, 1) & 0x0f) == 0);
  wr(s, 1, 0x0f);
  CHECK((rd(s, 1) & 0x0f) == 0x0f);
  wr(s, 1, 0);
  wr(s, 7, 0xa5);
  CHECK(rd(s, 7) == 0xa5);
  wr(s, 4, 0x10 | 0x0a);  // loopback, RTS, OUT2
  CHECK((rd(s, 6) & 0xf0) == 0x90);
  wr(s, 4, 0x08);
  wr(s, 2, 0x01);  // FIFO on
  CHECK((rd(s, 2) & 0xc0) == 0xc0);
  CHECK((rd(s, 5) & 0x60) == 0x60);
}

TEST_CASE("serial writes THR to its fd and raises THRE interrupts") {
  Pipe p = Pipe::make();
  FakeIrq irq;
  devices::Serial s(irq, p.write.get());
  wr(s, 0, 'h');
  wr(s, 0, 'i');
  char buf[2];
  REQUIRE(read(p.read.get(), buf, 2) == 2);
  CHECK(std::string(buf, 2) == "hi");
  CHECK(!irq.high());    // THRI not enabled yet
  wr(s, 1, 0x02);        // enable THRI: THR is empty, so the interrupt is pending at once
  CHECK(irq.high());
  CHECK((rd(s, 2) & 0x0f) == 0x02);  // IIR says THRE; reading it clears it
  CHECK(!irq.high());
  CHECK((rd(s, 2) & 0x0f) == 0x01);
  wr(s, 0, 'x');  // transmit: THRE pending again
  CHECK(irq.high());
  wr(s, 1, 0);  // disable THRI: line drops
  CHECK(!irq.high());
}

TEST_CASE("serial receive path and save/restore") {
  FakeIrq irq;
  devices::Serial s(irq, -1);
  wr(s, 1, 0x01);
  const uint8_t in[] = {'a', 'b'};
  s.enqueue_input(in);
  CHECK(irq.high());
  CHECK((rd(s, 5) & 1) == 1);
  CHECK(rd(s, 0) == 'a');
  auto saved = s.save();
  devices::Serial t(irq, -1);
  t.restore(saved);
  CHECK(rd(t, 1) == 0x01);
  CHECK(rd(t, 0) == 'b');
  CHECK((rd(t, 5) & 1) == 0);
  saved.pop_back();
  CHECK_THROWS_AS(t.restore(saved), Error);
}

TEST_CASE("i8042 reset command ends the VM") {
  int resets = 0;
  devices::I8042 k([&] { resets++; });
  CHECK((rd(k, 4) & 1) == 0);
  wr(k, 4, 0xaa);
  CHECK((rd(k, 4) & 1) == 1);
  CHECK(rd(k, 0) == 0x55);
  wr(k, 4, 0xfe);
  CHECK(resets == 1);
  CHECK(k.reset_requested());
  devices::I8042 k2(nullptr);
  k2.restore(k.save());
  CHECK_THROWS_AS(k2.restore(std::vector<uint8_t>{1, 2}), Error);
}

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
