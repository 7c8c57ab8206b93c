// VirtioMmio with a recording backend: identification registers, feature negotiation, queue
// setup, the status state machine, interrupts and their acknowledgement, config space, and a
// save/restore round trip into a fresh transport.
#include <doctest/doctest.h>

#include "devices/virtio/mmio.h"
#include "support/virtio_driver.h"
#include "util/error.h"

using namespace space;
using namespace space::devices;
using namespace space::memory;
using space::testing::FakeDriver;
using space::testing::RecordingIrq;

namespace {

struct TestBackend : devices::VirtioBackend {
  int activations = 0, resets = 0;
  std::vector<size_t> notified;
  uint8_t config[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  uint32_t saved_value = 0x1234;

  uint32_t device_id() const override { return 42; }
  uint64_t device_features() const override { return (1ULL << 3) | (1ULL << 40); }
  size_t num_queues() const override { return 2; }
  uint16_t queue_max_size(size_t i) const override { return i == 0 ? 64 : 16; }
  void read_config(uint64_t off, std::span<uint8_t> d) override { copy_config(config, off, d); }
  void write_config(uint64_t off, std::span<const uint8_t> d) override {
    for (size_t i = 0; i < d.size() && off + i < sizeof config; i++) config[off + i] = d[i];
  }
  void activate() override { activations++; }
  void notify(size_t i) override { notified.push_back(i); }
  void reset() override { resets++; }
  std::vector<uint8_t> save_state() const override {
    return {static_cast<uint8_t>(saved_value), static_cast<uint8_t>(saved_value >> 8)};
  }
  void restore_state(std::span<const uint8_t> s) override {
    if (s.size() != 2) fail("bad test state");
    saved_value = s[0] | (s[1] << 8);
  }
  devices::VirtioTransport& t() { return *transport_; }
};

struct Rig {
  memory::GuestMemory mem = memory::GuestMemory::anonymous(4 << 20);
  RecordingIrq irq;
  TestBackend* be;
  std::unique_ptr<devices::VirtioMmio> dev;
  std::unique_ptr<FakeDriver> drv;
  Rig() {
    auto b = std::make_unique<TestBackend>();
    be = b.get();
    dev = std::make_unique<devices::VirtioMmio>("virtio-test0", mem, irq, std::move(b));
    drv = std::make_unique<FakeDriver>(mem, *dev);
  }
};

}  // namespace

TEST_CASE("identification registers") {
  Rig r;
  CHECK(r.drv->rd(0x000) == 0x74726976);
  CHECK(r.drv->rd(0x004) == 2);
  CHECK(r.drv->rd(0x008) == 42);
  CHECK(r.drv->rd(0x00c) == devices::VirtioMmio::kVendorId);
  CHECK(r.dev->name() == "virtio-test0");
  // Registers only take aligned 32-bit accesses.
  uint8_t b[2] = {0xff, 0xff};
  r.dev->read(0x000, b);
  CHECK(b[0] == 0);
  r.dev->read(0x002, {b, 2});
  CHECK(b[0] == 0);
}

TEST_CASE("feature negotiation requires VERSION_1 and a subset of the offer") {
  Rig r;
  auto& d = *r.drv;
  d.wr(0x14, 0);
  CHECK(d.rd(0x10) == (1u << 3));
  d.wr(0x14, 1);
  CHECK(d.rd(0x10) == ((1u << 8) | 1u));  // bit 40 and VERSION_1 (bit 32)
  d.wr(0x14, 2);
  CHECK(d.rd(0x10) == 0);

  d.wr(0x70, 1);
  d.wr(0x70, 3);
  SUBCASE("legacy driver without VERSION_1 is refused") {
    d.wr(0x24, 0);
    d.wr(0x20, 1u << 3);
    d.wr(0x70, 3 | 8);
    CHECK((d.rd(0x70) & 8) == 0);
  }
  SUBCASE("features not offered are refused") {
    d.wr(0x24, 1);
    d.wr(0x20, 1 | (1u << 9));
    d.wr(0x70, 3 | 8);
    CHECK((d.rd(0x70) & 8) == 0);
  }
  SUBCASE("a proper subset is accepted and then frozen") {
    d.wr(0x24, 1);
    d.wr(0x20, 1);
    d.wr(0x70, 3 | 8);
    CHECK((d.rd(0x70) & 8) == 8);
    d.wr(0x24, 0);
    d.wr(0x20, 1u << 3);  // too late
    CHECK(r.be->t().driver_features() == devices::virtio::kFVersion1);
  }
}

TEST_CASE("queue setup, status machine and notifications") {
  Rig r;
  auto& d = *r.drv;
  d.wr(0x30, 0);
  CHECK(d.rd(0x34) == 64);
  d.wr(0x30, 1);
  CHECK(d.rd(0x34) == 16);
  d.wr(0x30, 2);
  CHECK(d.rd(0x34) == 0);  // no such queue

  d.wr(0x50, 0);  // notify before DRIVER_OK: ignored
  CHECK(r.be->notified.empty());
  d.wr(0x70, 1 | 2 | 4);  // DRIVER_OK without FEATURES_OK: refused
  CHECK((d.rd(0x70) & 4) == 0);
  CHECK(r.be->activations == 0);

  REQUIRE(d.init(16) == (1 | 2 | 4 | 8));
  CHECK(r.be->activations == 1);
  d.wr(0x30, 0);
  CHECK(d.rd(0x44) == 1);
  CHECK(r.be->t().queue(0).size() == 16);
  CHECK(r.be->t().queue(0).avail_addr() == d.avail_addr(0));
  // Layout registers are frozen while the queue is ready.
  d.wr(0x38, 8);
  CHECK(r.be->t().queue(0).size() == 16);

  d.kick(1);
  d.kick(7);  // out of range: ignored
  REQUIRE(r.be->notified.size() == 1);
  CHECK(r.be->notified[0] == 1);

  // Clearing bits other than by reset is ignored.
  d.wr(0x70, 1);
  CHECK(d.rd(0x70) == (1 | 2 | 4 | 8));

  // Reset.
  d.wr(0x70, 0);
  CHECK(d.rd(0x70) == 0);
  CHECK(r.be->resets == 2);  // init() starts with a reset too
  d.wr(0x30, 0);
  CHECK(d.rd(0x44) == 0);
}

TEST_CASE("an invalid queue marks the device as needing reset") {
  Rig r;
  auto& d = *r.drv;
  d.wr(0x70, 1 | 2);
  d.wr(0x24, 1);
  d.wr(0x20, 1);
  d.wr(0x70, 1 | 2 | 8);
  d.wr(0x30, 0);
  d.wr(0x38, 24);  // not a power of two
  d.wr(0x44, 1);
  CHECK(d.rd(0x44) == 0);
  CHECK((d.rd(0x70) & devices::virtio::kStatusNeedsReset) != 0);
  d.wr(0x70, 0);
  CHECK(d.rd(0x70) == 0);
}

TEST_CASE("interrupts set InterruptStatus, pulse the line and are acked") {
  Rig r;
  auto& d = *r.drv;
  REQUIRE((d.init(16) & 4) != 0);
  r.be->t().signal_used(0);
  CHECK(r.irq.edges == 1);
  CHECK_FALSE(r.irq.level);  // an edge, not a held level
  CHECK(d.rd(0x60) == 1);
  r.be->t().signal_config();
  CHECK(d.rd(0x60) == 3);
  CHECK(d.rd(0xfc) == 1);  // config generation moved
  d.wr(0x64, 1);
  CHECK(d.rd(0x60) == 2);
  d.wr(0x64, 2);
  CHECK(d.rd(0x60) == 0);
  // Suppressed by the driver's NO_INTERRUPT flag.
  r.mem.write_obj(d.avail_addr(0), uint16_t{1});
  r.be->t().signal_used(0);
  CHECK(r.irq.edges == 2);
  CHECK(d.rd(0x60) == 0);
  // fail() sets DEVICE_NEEDS_RESET and raises a config interrupt; notifications stop.
  r.be->t().fail("test");
  CHECK((d.rd(0x70) & devices::virtio::kStatusNeedsReset) != 0);
  CHECK(r.irq.edges == 3);
  CHECK_FALSE(r.be->t().running());
  d.kick(0);
  CHECK(r.be->notified.empty());
}

TEST_CASE("config space passes through to the backend") {
  Rig r;
  uint8_t b[4];
  r.dev->read(0x102, b);
  CHECK(b[0] == 3);
  CHECK(b[3] == 6);
  r.dev->read(0x106, b);
  CHECK(b[1] == 8);
  CHECK(b[2] == 0);  // past the end
  uint8_t w = 0x99;
  r.dev->write(0x100, {&w, 1});
  CHECK(r.be->config[0] == 0x99);
}

TEST_CASE("save/restore round trip") {
  Rig a;
  REQUIRE((a.drv->init(16) & 4) != 0);
  a.drv->wr(0x30, 1);
  a.be->t().signal_used(0);
  a.be->saved_value = 0xbeef;
  a.drv->post(0, {{0x200000, 8, true}});
  devices::DescChain c;
  std::string why;
  REQUIRE(a.be->t().queue(0).pop(c, why) == devices::Virtqueue::Pop::Chain);
  a.be->t().queue(0).push_used(c.head, 8);
  auto blob = a.dev->save();

  Rig b;
  b.dev->restore(blob);
  CHECK(b.drv->rd(0x70) == a.drv->rd(0x70));
  CHECK(b.drv->rd(0x60) == 1);
  CHECK(b.be->saved_value == 0xbeef);
  CHECK(b.be->activations == 1);  // restored running
  CHECK(b.be->resets == 1);
  CHECK(b.be->t().driver_features() == a.be->t().driver_features());
  auto qs = b.be->t().queue(0).state();
  CHECK(qs.ready);
  CHECK(qs.size == 16);
  CHECK(qs.next_avail == 1);
  CHECK(qs.next_used == 1);
  CHECK(b.drv->rd(0x34) == 16);  // QueueSel restored (1)
  CHECK(b.dev->save() == blob);

  SUBCASE("malformed state is refused and leaves the device alone") {
    Rig c2;
    auto bad = blob;
    bad.resize(bad.size() - 3);
    CHECK_THROWS_AS(c2.dev->restore(bad), Error);
    CHECK_THROWS_AS(c2.dev->restore(std::vector<uint8_t>{}), Error);
    bad = blob;
    bad[0] ^= 1;
    CHECK_THROWS_AS(c2.dev->restore(bad), Error);
    CHECK(c2.drv->rd(0x70) == 0);
    CHECK(c2.be->resets == 0);
  }
  SUBCASE("a queue outside RAM is refused") {
    memory::GuestMemory small =
        memory::GuestMemory::anonymous(64 << 10);  // rings at 0x10000+ do not fit
    RecordingIrq irq;
    devices::VirtioMmio small_dev("virtio-test1", small, irq, std::make_unique<TestBackend>());
    CHECK_THROWS_AS(small_dev.restore(blob), Error);
  }
}

TEST_CASE("restore refuses driver features the device does not offer") {
  Rig a;
  REQUIRE((a.drv->init(16) & 4) != 0);
  auto state = proto::decode_fields<devices::VirtioMmio::State>(a.dev->save());
  CHECK(state.driver_features == devices::virtio::kFVersion1);  // what FakeDriver acks
  Rig b;
  CHECK_NOTHROW(b.dev->restore(proto::encode_fields(state)));
  state.driver_features |= 1ULL << 5;  // offered by a device of another build, not by this one
  Rig c;
  CHECK_THROWS_WITH_AS(c.dev->restore(proto::encode_fields(state)),
                       doctest::Contains("acknowledged features 0x20"), Error);
  CHECK(c.dev->status() == 0);  // nothing was restored
}

TEST_CASE("before FEATURES_OK the driver's feature bits are not checked on restore") {
  Rig a;
  a.drv->wr(0x70, 1 | 2);    // ACKNOWLEDGE | DRIVER
  a.drv->wr(0x24, 0);        // DriverFeaturesSel
  a.drv->wr(0x20, 1u << 5);  // a bit the device does not offer, not yet negotiated
  auto saved = a.dev->save();
  Rig b;
  CHECK_NOTHROW(b.dev->restore(saved));
  CHECK(b.dev->save() == saved);
}
