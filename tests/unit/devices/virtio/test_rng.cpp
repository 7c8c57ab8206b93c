// virtio-rng through the mmio transport: requests are filled with entropy and bounded in size.
#include <doctest/doctest.h>

#include <algorithm>

#include "devices/virtio/rng.h"
#include "support/virtio_driver.h"

using namespace space;
using namespace space::devices;
using namespace space::memory;
using space::testing::FakeDriver;
using space::testing::RecordingIrq;

TEST_CASE("virtio-rng fills writable buffers, at most 64 KiB per request") {
  memory::GuestMemory mem = memory::GuestMemory::anonymous(8 << 20);
  RecordingIrq irq;
  devices::VirtioMmio dev("virtio-rng0", mem, irq, std::make_unique<devices::VirtioRng>());
  FakeDriver drv(mem, dev);
  CHECK(drv.rd(0x008) == 4);
  REQUIRE((drv.init(64) & devices::virtio::kStatusDriverOk) != 0);

  uint64_t a = drv.alloc(16), b = drv.alloc(48);
  drv.post(0, {{a, 16, true}, {b, 48, true}});
  drv.kick(0);
  auto u = drv.used(0);
  REQUIRE(u.size() == 1);
  CHECK(u[0].second == 64);
  CHECK(irq.edges == 1);
  std::vector<uint8_t> got(64);
  mem.read(a, got.data(), 16);
  mem.read(b, got.data() + 16, 48);
  CHECK(std::any_of(got.begin(), got.end(), [](uint8_t x) { return x != 0; }));

  uint64_t big = drv.alloc(256 << 10);
  drv.post(0, {{big, 256 << 10, true}});
  drv.kick(0);
  u = drv.used(0);
  REQUIRE(u.size() == 1);
  CHECK(u[0].second == devices::VirtioRng::kMaxPerRequest);

  // A readable-only request gets nothing; a hostile one breaks the device, nothing more.
  drv.post(0, {{a, 16, false}});
  drv.kick(0);
  u = drv.used(0);
  REQUIRE(u.size() == 1);
  CHECK(u[0].second == 0);
  drv.post(0, {{~0ULL - 8, 16, true}});
  drv.kick(0);
  CHECK((dev.status() & devices::virtio::kStatusNeedsReset) != 0);
}
