// Unit tests for vmm/bus: accesses routed by address range to the claiming device (with the
// offset from its base, under the device's mutex), overlapping and empty ranges refused,
// unclaimed addresses read as all-ones.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "devices/i8042.h"
#include "devices/serial.h"
#include "support/device_io.h"
#include "util/error.h"
#include "vmm/bus.h"

using namespace space;
using space::test::FakeIrq;

namespace {

// Records every access (offset, size) and whether its mutex was held; reads return 0xa0 + offset.
struct Probe : devices::Device {
  std::string id;
  std::vector<std::pair<uint64_t, size_t>> reads, writes;
  std::vector<uint8_t> written;
  bool unlocked_access = false;
  explicit Probe(std::string n) : id(std::move(n)) {}
  std::string name() const override { return id; }
  void read(uint64_t off, std::span<uint8_t> d) override {
    note_lock();
    reads.emplace_back(off, d.size());
    for (size_t i = 0; i < d.size(); i++) d[i] = static_cast<uint8_t>(0xa0 + off + i);
  }
  void write(uint64_t off, std::span<const uint8_t> d) override {
    note_lock();
    writes.emplace_back(off, d.size());
    written.assign(d.begin(), d.end());
  }
  std::vector<uint8_t> save() const override { return {}; }
  void restore(std::span<const uint8_t>) override {}
  // The bus should be holding the mutex: another thread cannot take it now.
  void note_lock() {
    bool got = false;
    std::thread([&] {
      if (mutex().try_lock()) {
        got = true;
        mutex().unlock();
      }
    }).join();
    if (got) unlocked_access = true;
  }
};

}  // namespace

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

TEST_CASE("bus passes the offset from the range's base and holds the device's mutex") {
  Probe a("a"), b("b");
  vmm::Bus bus;
  bus.add(0x1000, 0x10, &a);
  bus.add(0x1010, 0x10, &b);  // adjacent ranges do not overlap
  uint8_t r[4] = {};
  CHECK(bus.read(0x1004, {r, 4}));
  CHECK(r[0] == 0xa4);
  CHECK(r[3] == 0xa7);
  uint8_t w[2] = {1, 2};
  CHECK(bus.write(0x101e, {w, 2}));  // the last two bytes of b
  REQUIRE(a.reads.size() == 1);
  CHECK(a.reads[0] == std::pair<uint64_t, size_t>{4, 4});
  REQUIRE(b.writes.size() == 1);
  CHECK(b.writes[0] == std::pair<uint64_t, size_t>{0xe, 2});
  CHECK(b.written == std::vector<uint8_t>{1, 2});
  CHECK_FALSE(a.unlocked_access);
  CHECK_FALSE(b.unlocked_access);

  // An access that runs from one range into the next belongs to neither.
  CHECK_FALSE(bus.write(0x100e, {r, 4}));
  CHECK_FALSE(bus.read(0x100f, {r, 2}));
  CHECK(r[0] == 0xff);
  CHECK(r[1] == 0xff);
  CHECK_FALSE(bus.write(0x0fff, {w, 1}));  // just below the first range
  CHECK_FALSE(bus.write(0x1020, {w, 1}));  // just past the last
  CHECK(a.writes.empty());
  CHECK(b.writes.size() == 1);
}

TEST_CASE("bus refuses empty, wrapping and overlapping ranges, naming the devices") {
  Probe a("dev-a"), b("dev-b");
  vmm::Bus bus;
  CHECK_THROWS_WITH_AS(bus.add(0x10, 0, &a), "bus range for dev-a is invalid", Error);
  CHECK_THROWS_WITH_AS(bus.add(~0ULL - 1, 4, &a), "bus range for dev-a is invalid", Error);
  bus.add(0x100, 0x100, &a);
  CHECK_THROWS_WITH_AS(bus.add(0x1ff, 1, &b), "bus range for dev-b overlaps dev-a", Error);
  CHECK_THROWS_WITH_AS(bus.add(0x80, 0x81, &b), "bus range for dev-b overlaps dev-a", Error);
  CHECK_THROWS_WITH_AS(bus.add(0x0, 0x1000, &b), "bus range for dev-b overlaps dev-a", Error);
  bus.add(0x200, 1, &b);
  uint8_t v = 0;
  CHECK(bus.read(0x200, {&v, 1}));
  CHECK(v == 0xa0);
}
