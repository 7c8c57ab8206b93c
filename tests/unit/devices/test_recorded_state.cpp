// A recorded snapshot: data/vmstate-format2.bin is the vmstate of the test template that
// scripts/test.sh built on 2026-12-07 (a booted guest-init on 1 vCPU, 256 MiB, format 2), before
// the devices' save/restore came from field lists (proto/fields.h). It must still decode, encode
// to exactly its own bytes, and every device section must restore into a device built as the
// VMM builds it and save back to exactly the recorded bytes.
#include <doctest/doctest.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "devices/i8042.h"
#include "devices/serial.h"
#include "devices/virtio/block.h"
#include "devices/virtio/mmio.h"
#include "devices/virtio/rng.h"
#include "devices/virtio/vsock.h"
#include "support/temp_dir.h"
#include "support/virtio_driver.h"
#include "util/event_loop.h"
#include "util/fs.h"
#include "vmm/snapshot.h"

using namespace space;

namespace {

std::string recorded_path() {
  return std::string(SPACE_TEST_DATA) + "/vmstate-format2.bin";
}

// The devices of the recorded machine, built with the options vmm/machine.cpp gives them.
struct RecordedMachine {
  test::TempDir tmp{"recorded"};
  memory::GuestMemory mem = memory::GuestMemory::anonymous(256 << 20);
  testing::RecordingIrq irq;
  EventLoop loop;
  std::unique_ptr<devices::Device> make(const std::string& name) {
    if (name == "serial") return std::make_unique<devices::Serial>(irq, -1);
    if (name == "i8042") return std::make_unique<devices::I8042>([] {});
    std::unique_ptr<devices::VirtioBackend> be;
    if (name == "virtio-blk0" || name == "virtio-blk1")
      be = std::make_unique<devices::VirtioBlock>(Fd(), devices::VirtioBlock::Options{});
    else if (name == "virtio-vsock")
      be = std::make_unique<devices::VirtioVsock>(loop, 3, tmp.path + "/v.sock");
    else if (name == "virtio-rng")
      be = std::make_unique<devices::VirtioRng>();
    REQUIRE_MESSAGE(be, "no device called " << name);
    return std::make_unique<devices::VirtioMmio>(name, mem, irq, std::move(be));
  }
};

}  // namespace

TEST_CASE("a recorded vmstate decodes and encodes to its own bytes") {
  auto bytes = fs::read_file(recorded_path());
  auto s = vmm::snapshot::decode({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                                 recorded_path());
  CHECK(s.machine.vcpus == 1);
  CHECK(s.machine.memory_bytes == 256ull << 20);
  CHECK(s.machine.devices == std::vector<std::string>{"serial", "i8042", "virtio-blk0",
                                                      "virtio-vsock", "virtio-rng", "virtio-blk1"});
  auto again = vmm::snapshot::encode(s);
  CHECK(std::string(again.begin(), again.end()) == bytes);
}

TEST_CASE("every recorded device state restores and saves to the same bytes") {
  auto bytes = fs::read_file(recorded_path());
  auto s = vmm::snapshot::decode({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                                 recorded_path());
  RecordedMachine m;
  REQUIRE(s.devices.size() == 6);
  for (const auto& d : s.devices) {
    CAPTURE(d.name);
    auto dev = m.make(d.name);
    dev->restore(d.data);
    CHECK(dev->save() == d.data);
  }
}
