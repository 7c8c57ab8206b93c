// Test helpers for the virtio unit tests: a recording IrqLine and a minimal guest driver that
// talks to a VirtioMmio through its registers and builds split rings in fake guest memory, the
// way the Linux virtio-mmio driver does (status handshake, feature negotiation, queue setup,
// chains, notifications, reading the used ring). Layout in guest RAM: queue i's rings at
// 0x10000 + i * 0x10000 (descriptors, avail at +0x4000, used at +0x8000); buffers from 0x100000.
#pragma once
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "devices/device.h"
#include "devices/virtio/backend.h"
#include "devices/virtio/mmio.h"
#include "memory/guest_memory.h"

namespace space::testing {

using namespace space::devices;
using namespace space::memory;

struct RecordingIrq : devices::IrqLine {
  int edges = 0;
  bool level = false;
  void set_level(bool l) override {
    if (l && !level) edges++;
    level = l;
  }
};

struct Buf {
  uint64_t gpa;
  uint32_t len;
  bool writable;
};

class FakeDriver {
 public:
  static constexpr uint64_t kRingBase = 0x10000;
  static constexpr uint64_t kRingStride = 0x10000;
  static constexpr uint64_t kHeapBase = 0x100000;

  FakeDriver(const memory::GuestMemory& mem, devices::VirtioMmio& dev) : mem_(mem), dev_(dev) {}

  uint32_t rd(uint64_t off) {
    uint32_t v = 0;
    dev_.read(off, {reinterpret_cast<uint8_t*>(&v), 4});
    return v;
  }
  void wr(uint64_t off, uint32_t v) { dev_.write(off, {reinterpret_cast<uint8_t*>(&v), 4}); }

  // Full bring-up: ACK, DRIVER, accept `features` (masked by the offer), FEATURES_OK, every
  // queue at size `qsize`, DRIVER_OK. Returns the final status.
  uint32_t init(uint16_t qsize = 64, uint64_t features = devices::virtio::kFVersion1) {
    wr(0x70, 0);
    wr(0x70, 1);
    wr(0x70, 1 | 2);
    wr(0x14, 0);
    uint64_t offered = rd(0x10);
    wr(0x14, 1);
    offered |= uint64_t{rd(0x10)} << 32;
    uint64_t accept = offered & features;
    wr(0x24, 0);
    wr(0x20, static_cast<uint32_t>(accept));
    wr(0x24, 1);
    wr(0x20, static_cast<uint32_t>(accept >> 32));
    wr(0x70, 1 | 2 | 8);
    if (!(rd(0x70) & 8)) return rd(0x70);
    for (uint32_t q = 0; q < dev_.backend().num_queues(); q++) setup_queue(q, qsize);
    wr(0x70, 1 | 2 | 8 | 4);
    return rd(0x70);
  }

  void setup_queue(uint32_t q, uint16_t qsize) {
    if (queues_.size() <= q) queues_.resize(q + 1);
    queues_[q] = Q{qsize, 0, 0, 0};
    uint64_t base = kRingBase + q * kRingStride;
    wr(0x30, q);
    wr(0x38, qsize);
    wr(0x80, static_cast<uint32_t>(base));
    wr(0x84, 0);
    wr(0x90, static_cast<uint32_t>(base + 0x4000));
    wr(0x94, 0);
    wr(0xa0, static_cast<uint32_t>(base + 0x8000));
    wr(0xa4, 0);
    wr(0x44, 1);
  }

  uint64_t desc_addr(uint32_t q) const { return kRingBase + q * kRingStride; }
  uint64_t avail_addr(uint32_t q) const { return desc_addr(q) + 0x4000; }
  uint64_t used_addr(uint32_t q) const { return desc_addr(q) + 0x8000; }

  // Guest memory for buffers (bump allocator, 16-byte aligned).
  uint64_t alloc(uint64_t len) {
    uint64_t at = heap_;
    heap_ += (len + 15) & ~uint64_t{15};
    return at;
  }
  // A buffer holding `bytes`.
  uint64_t put(const void* bytes, uint64_t len) {
    uint64_t at = alloc(len);
    mem_.write(at, bytes, len);
    return at;
  }

  // Writes a chain of descriptors (taken round-robin) and publishes it. Returns its head.
  uint16_t post(uint32_t q, const std::vector<Buf>& bufs) {
    Q& s = queues_.at(q);
    uint16_t head = s.next_desc;
    for (size_t i = 0; i < bufs.size(); i++) {
      uint16_t idx = static_cast<uint16_t>((head + i) % s.size);
      uint16_t next = static_cast<uint16_t>((head + i + 1) % s.size);
      uint16_t flags = (i + 1 < bufs.size() ? 1 : 0) | (bufs[i].writable ? 2 : 0);
      write_desc(q, idx, bufs[i].gpa, bufs[i].len, flags, next);
    }
    s.next_desc = static_cast<uint16_t>((head + bufs.size()) % s.size);
    publish(q, head);
    return head;
  }
  void write_desc(uint32_t q, uint16_t idx, uint64_t addr, uint32_t len, uint16_t flags,
                  uint16_t next) {
    uint8_t d[16];
    std::memcpy(d, &addr, 8);
    std::memcpy(d + 8, &len, 4);
    std::memcpy(d + 12, &flags, 2);
    std::memcpy(d + 14, &next, 2);
    mem_.write(desc_addr(q) + 16ULL * idx, d, 16);
  }
  // Puts `head` on the avail ring and bumps avail.idx.
  void publish(uint32_t q, uint16_t head) {
    Q& s = queues_.at(q);
    mem_.write_obj(avail_addr(q) + 4 + 2ULL * (s.avail_idx % s.size), head);
    s.avail_idx++;
    mem_.write_obj(avail_addr(q) + 2, s.avail_idx);
  }
  void kick(uint32_t q) { wr(0x50, q); }

  // Used entries (id, len) published since the last call.
  std::vector<std::pair<uint32_t, uint32_t>> used(uint32_t q) {
    Q& s = queues_.at(q);
    uint16_t idx = 0;
    mem_.read_obj(used_addr(q) + 2, idx);
    std::vector<std::pair<uint32_t, uint32_t>> out;
    while (s.used_seen != idx) {
      uint32_t e[2];
      mem_.read(used_addr(q) + 4 + 8ULL * (s.used_seen % s.size), e, 8);
      out.emplace_back(e[0], e[1]);
      s.used_seen++;
    }
    return out;
  }

 private:
  struct Q {
    uint16_t size;
    uint16_t next_desc;
    uint16_t avail_idx;
    uint16_t used_seen;
  };
  const memory::GuestMemory& mem_;
  devices::VirtioMmio& dev_;
  std::vector<Q> queues_;
  uint64_t heap_ = kHeapBase;
};

}  // namespace space::testing
