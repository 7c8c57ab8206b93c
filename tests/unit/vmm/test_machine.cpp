// Unit tests for vmm/machine, vmm/vcpu and vmm/machine_snapshot on a real VM (each case needs
// /dev/kvm and is skipped without it), with support/tiny_guest.h's guests: one writes to the
// serial port and resets through the i8042 (the vCPU's port I/O exits, the PIO bus, both devices,
// the recorded exit and on_exit); one counts in guest memory, so that pause() is seen to stop it,
// capture() and restore() to carry it, mid-loop, into a new machine over a copy of its RAM
// (through the snapshot's bytes), and stop() to end it.
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "support/tiny_guest.h"
#include "vmm/snapshot.h"

using namespace space;
using namespace std::chrono_literals;

using namespace space::testing;

TEST_CASE(
    "Machine: a booted guest's port I/O reaches the serial port, and an i8042 reset ends it "
    "(needs /dev/kvm)" *
    test::needs_kvm()) {
  TinyGuest r(kHelloThenReset);
  vmm::Machine m(r.spec, r.loop, r.on_exit());
  m.boot();
  CHECK(m.cmdline().find("console=ttyS0") != std::string::npos);
  CHECK(m.vcpu_count() == 1);
  CHECK_FALSE(m.exit_reason());
  m.start();
  REQUIRE(eventually([&] { return r.exits.load() > 0; }));
  auto exit = m.exit_reason();
  REQUIRE(exit);
  CHECK(exit->kind == vmm::VmExit::Kind::Reset);
  CHECK(exit->detail.find("i8042") != std::string::npos);
  CHECK(r.console_text() == "hi");
  m.stop();
  CHECK(r.exits.load() == 1);  // recorded once
}

TEST_CASE(
    "Machine: pause stops a running guest, and its capture restores into a new machine that "
    "carries on (needs /dev/kvm)" *
    test::needs_kvm()) {
  TinyGuest a(kCount);
  vmm::Machine src(a.spec, a.loop, a.on_exit());
  src.boot();
  src.start();
  REQUIRE(eventually([&] { return counter(src) > 1000; }));
  src.pause();
  CHECK(src.paused());
  uint64_t at_pause = counter(src);
  std::this_thread::sleep_for(50ms);
  CHECK(counter(src) == at_pause);  // parked: the guest does not run

  vmm::snapshot::Snapshot snap = src.capture();
  CHECK(snap.machine.vcpus == 1);
  CHECK(snap.machine.memory_bytes == kMemory);
  CHECK(snap.machine.devices.size() == 6);
  CHECK(snap.vcpus.at(0).regs.rip >= kCodeAddr);
  CHECK(snap.vcpus.at(0).regs.rip < kCodeAddr + kCount.size());
  // Through the vmstate bytes, as a template is.
  auto bytes = vmm::snapshot::encode(snap);
  vmm::snapshot::Snapshot back = vmm::snapshot::decode(bytes, "captured");
  CHECK(vmm::snapshot::encode(back) == bytes);

  // A new machine over a copy of the paused guest's RAM.
  TinyGuest b(kCount);
  auto mem = memory::GuestMemory::anonymous(kMemory);
  std::memcpy(mem.ptr(0, kMemory), src.memory().ptr(0, kMemory), kMemory);
  vmm::Machine dst(b.spec, std::move(mem), b.loop, b.on_exit());
  dst.restore(back);
  CHECK(counter(dst) == at_pause);
  dst.start();
  CHECK(eventually([&] { return counter(dst) > at_pause + 1000; }));
  CHECK(counter(src) == at_pause);  // the source is still parked

  // Resume the source: both count on, separately.
  src.resume();
  CHECK_FALSE(src.paused());
  CHECK(eventually([&] { return counter(src) > at_pause + 1000; }));
  src.stop();
  dst.stop();
  CHECK_FALSE(src.exit_reason());  // stopped, not exited
  uint64_t stopped = counter(dst);
  std::this_thread::sleep_for(20ms);
  CHECK(counter(dst) == stopped);
}

TEST_CASE(
    "Machine: restore refuses a snapshot of another machine before any vCPU runs (needs "
    "/dev/kvm)" *
    test::needs_kvm()) {
  TinyGuest a(kCount);
  vmm::Machine src(a.spec, a.loop, a.on_exit());
  src.boot();
  src.start();
  src.pause();
  const auto captured = src.capture();
  src.stop();
  auto snap = captured;
  snap.machine.devices.pop_back();  // one device short
  TinyGuest b(kCount);
  vmm::Machine dst(b.spec, memory::GuestMemory::anonymous(kMemory), b.loop, b.on_exit());
  CHECK_THROWS_AS(dst.restore(snap), Error);
  snap = captured;
  snap.vcpus.push_back(snap.vcpus[0]);  // two vCPUs, this machine has one
  snap.machine.vcpus = 2;
  CHECK_THROWS_AS(dst.restore(snap), Error);
}
