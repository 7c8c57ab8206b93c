// virtio-blk against a temporary file through the mmio transport and a fake guest driver: read,
// write, flush, get-id, read-only disks, requests past the end, malformed requests, and the empty
// image slot (no medium) with its configuration-change interrupt.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "devices/virtio/block.h"
#include "support/temp_dir.h"
#include "support/virtio_driver.h"

using namespace space;
using namespace space::devices;
using namespace space::memory;
using space::testing::Buf;
using space::testing::FakeDriver;
using space::testing::RecordingIrq;

namespace {

constexpr uint32_t kIn = 0, kOut = 1, kFlush = 4, kGetId = 8;
constexpr uint8_t kOk = 0, kIoErr = 1, kUnsupp = 2;

struct TempFile {
  test::TempDir dir{"blk"};
  std::string path = dir.path + "/disk";
  Fd fd;
  explicit TempFile(size_t bytes) {
    fd.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    REQUIRE(fd.valid());
    REQUIRE(::ftruncate(fd.get(), static_cast<off_t>(bytes)) == 0);
    std::vector<uint8_t> pattern(bytes);
    for (size_t i = 0; i < bytes; i++) pattern[i] = static_cast<uint8_t>(i / 512);
    REQUIRE(::pwrite(fd.get(), pattern.data(), bytes, 0) == static_cast<ssize_t>(bytes));
  }
  Fd reopen(int flags) const { return Fd(::open(path.c_str(), flags | O_CLOEXEC)); }
};

struct Rig {
  TempFile file{1 << 20};  // 2048 sectors
  memory::GuestMemory mem = memory::GuestMemory::anonymous(8 << 20);
  RecordingIrq irq;
  devices::VirtioBlock* blk;
  std::unique_ptr<devices::VirtioMmio> dev;
  std::unique_ptr<FakeDriver> drv;
  explicit Rig(bool ro = false, bool medium = true) {
    auto b =
        std::make_unique<devices::VirtioBlock>(medium ? file.reopen(ro ? O_RDONLY : O_RDWR) : Fd(),
                                               devices::VirtioBlock::Options{ro, "serial-123"});
    blk = b.get();
    dev = std::make_unique<devices::VirtioMmio>("virtio-blk0", mem, irq, std::move(b));
    drv = std::make_unique<FakeDriver>(mem, *dev);
    REQUIRE((drv->init(256) & devices::virtio::kStatusDriverOk) != 0);
  }
  uint64_t header(uint32_t type, uint64_t sector) {
    uint8_t h[16] = {};
    std::memcpy(h, &type, 4);
    std::memcpy(h + 8, &sector, 8);
    return drv->put(h, 16);
  }
  // Posts `bufs`, kicks, and returns the single used length.
  uint32_t run(const std::vector<Buf>& bufs) {
    drv->post(0, bufs);
    drv->kick(0);
    auto u = drv->used(0);
    REQUIRE(u.size() == 1);
    return u[0].second;
  }
  uint8_t status_at(uint64_t gpa) {
    uint8_t s = 0xff;
    mem.read(gpa, &s, 1);
    return s;
  }
};

}  // namespace

TEST_CASE("config space reports capacity, seg_max and size_max") {
  Rig r;
  uint8_t cfg[16];
  r.dev->read(0x100, {cfg, 8});
  uint64_t cap;
  std::memcpy(&cap, cfg, 8);
  CHECK(cap == 2048);
  uint32_t v;
  r.dev->read(0x10c, {reinterpret_cast<uint8_t*>(&v), 4});
  CHECK(v == devices::VirtioBlock::kSegMax);
  r.drv->wr(0x14, 0);
  CHECK((r.drv->rd(0x10) & (1u << 9)) != 0);  // FLUSH
  CHECK((r.drv->rd(0x10) & (1u << 5)) == 0);  // not RO
}

TEST_CASE("read, write, flush and get-id") {
  Rig r;
  uint64_t st = r.drv->alloc(1);

  // Read sectors 3..4 into two segments.
  uint64_t d1 = r.drv->alloc(512), d2 = r.drv->alloc(512);
  CHECK(r.run({{r.header(kIn, 3), 16, false}, {d1, 512, true}, {d2, 512, true}, {st, 1, true}}) ==
        1025);
  CHECK(r.status_at(st) == kOk);
  CHECK(r.status_at(d1) == 3);
  CHECK(r.status_at(d2 + 511) == 4);
  CHECK(r.irq.edges == 1);

  // Write sector 10, then read it back.
  std::vector<uint8_t> data(512, 0xab);
  uint64_t w = r.drv->put(data.data(), 512);
  CHECK(r.run({{r.header(kOut, 10), 16, false}, {w, 512, false}, {st, 1, true}}) == 1);
  CHECK(r.status_at(st) == kOk);
  uint8_t on_disk = 0;
  REQUIRE(::pread(r.file.fd.get(), &on_disk, 1, 10 * 512 + 7) == 1);
  CHECK(on_disk == 0xab);

  CHECK(r.run({{r.header(kFlush, 0), 16, false}, {st, 1, true}}) == 1);
  CHECK(r.status_at(st) == kOk);

  uint64_t id = r.drv->alloc(20);
  CHECK(r.run({{r.header(kGetId, 0), 16, false}, {id, 20, true}, {st, 1, true}}) == 21);
  char serial[21] = {};
  r.mem.read(id, serial, 20);
  CHECK(std::string(serial) == "serial-123");

  // The last sector is readable; one past it is not.
  CHECK(r.run({{r.header(kIn, 2047), 16, false}, {d1, 512, true}, {st, 1, true}}) == 513);
  CHECK(r.status_at(st) == kOk);
}

TEST_CASE("requests beyond the capacity fail with IOERR") {
  Rig r;
  uint64_t st = r.drv->alloc(1), d = r.drv->alloc(1024);
  CHECK(r.run({{r.header(kIn, 2048), 16, false}, {d, 512, true}, {st, 1, true}}) == 1);
  CHECK(r.status_at(st) == kIoErr);
  CHECK(r.run({{r.header(kIn, 2047), 16, false}, {d, 1024, true}, {st, 1, true}}) == 1);
  CHECK(r.status_at(st) == kIoErr);
  CHECK(r.run({{r.header(kOut, ~0ULL), 16, false}, {d, 512, false}, {st, 1, true}}) == 1);
  CHECK(r.status_at(st) == kIoErr);
  CHECK(r.run({{r.header(kIn, ~0ULL - 0), 16, false}, {d, 512, true}, {st, 1, true}}) == 1);
  CHECK(r.status_at(st) == kIoErr);
}

TEST_CASE("malformed requests fail without crashing") {
  Rig r;
  uint64_t st = r.drv->alloc(1), d = r.drv->alloc(1024);
  SUBCASE("header too short") {
    CHECK(r.run({{r.header(kIn, 0), 8, false}, {d, 512, true}, {st, 1, true}}) == 1);
    CHECK(r.status_at(st) == kIoErr);
  }
  SUBCASE("no status byte") {
    CHECK(r.run({{r.header(kOut, 0), 16, false}, {d, 512, false}}) == 0);
  }
  SUBCASE("status segment not writable") {
    CHECK(r.run({{r.header(kIn, 0), 16, false}, {st, 1, false}}) == 0);
  }
  SUBCASE("partial sector") {
    CHECK(r.run({{r.header(kIn, 0), 16, false}, {d, 100, true}, {st, 1, true}}) == 1);
    CHECK(r.status_at(st) == kIoErr);
  }
  SUBCASE("unknown type") {
    CHECK(r.run({{r.header(77, 0), 16, false}, {st, 1, true}}) == 1);
    CHECK(r.status_at(st) == kUnsupp);
  }
  SUBCASE("hostile chain marks the device broken") {
    r.drv->post(0, {{0xfffffff000ULL, 16, false}});
    r.drv->kick(0);
    CHECK((r.dev->status() & devices::virtio::kStatusNeedsReset) != 0);
  }
}

TEST_CASE("read-only disks refuse writes") {
  Rig r(true);
  r.drv->wr(0x14, 0);
  CHECK((r.drv->rd(0x10) & (1u << 5)) != 0);
  uint64_t st = r.drv->alloc(1);
  std::vector<uint8_t> data(512, 0xcd);
  uint64_t w = r.drv->put(data.data(), 512);
  CHECK(r.run({{r.header(kOut, 1), 16, false}, {w, 512, false}, {st, 1, true}}) == 1);
  CHECK(r.status_at(st) == kIoErr);
  uint8_t on_disk = 0;
  REQUIRE(::pread(r.file.fd.get(), &on_disk, 1, 512) == 1);
  CHECK(on_disk == 1);
  CHECK(r.run({{r.header(kIn, 1), 16, false}, {w, 512, true}, {st, 1, true}}) == 513);
  CHECK(r.status_at(st) == kOk);
}

TEST_CASE("an empty slot has capacity 0 and fails every transfer; config_changed interrupts") {
  Rig r(/*ro=*/false, /*medium=*/false);
  CHECK_FALSE(r.blk->has_medium());
  uint64_t cap = 1;
  r.dev->read(0x100, {reinterpret_cast<uint8_t*>(&cap), 8});
  CHECK(cap == 0);
  uint64_t st = r.drv->alloc(1), d = r.drv->alloc(512);
  CHECK(r.run({{r.header(kIn, 0), 16, false}, {d, 512, true}, {st, 1, true}}) == 1);
  CHECK(r.status_at(st) == kIoErr);
  CHECK(r.run({{r.header(kOut, 0), 16, false}, {d, 512, false}, {st, 1, true}}) == 1);
  CHECK(r.status_at(st) == kIoErr);
  CHECK(r.run({{r.header(kFlush, 0), 16, false}, {st, 1, true}}) == 1);
  CHECK(r.status_at(st) == kIoErr);
  r.blk->sync();  // nothing to flush: no error

  // A running device tells the driver its config changed: ConfigGeneration moves, the
  // interrupt status has the config bit, and an edge is raised.
  uint32_t gen = r.drv->rd(0xfc);
  int edges = r.irq.edges;
  {
    std::lock_guard lk(r.dev->mutex());
    r.dev->config_changed();
  }
  CHECK(r.drv->rd(0xfc) == gen + 1);
  CHECK((r.dev->interrupt_status() & 2) != 0);
  CHECK(r.irq.edges == edges + 1);
  CHECK(Rig().blk->has_medium());
}

TEST_CASE("config_changed before the driver runs the device raises nothing") {
  TempFile f(4096);
  auto mem = memory::GuestMemory::anonymous(1 << 20);
  RecordingIrq irq;
  devices::VirtioMmio dev(
      "virtio-blk1", mem, irq,
      std::make_unique<devices::VirtioBlock>(f.reopen(O_RDWR), devices::VirtioBlock::Options{}));
  std::lock_guard lk(dev.mutex());
  dev.config_changed();
  CHECK(irq.edges == 0);
  CHECK(dev.interrupt_status() == 0);
}
