// Virtqueue against fake guest memory: normal chains and the copy helpers, then hostile rings
// and chains (loops, indexes out of range, buffers outside RAM, huge and overflowing lengths,
// misplaced rings, bad sizes), none of which may crash or touch memory outside RAM.
#include <doctest/doctest.h>

#include <cstring>

#include "devices/virtio/queue.h"

using namespace space;
using namespace space::devices;
using namespace space::memory;

namespace {

constexpr uint64_t kDesc = 0x1000, kAvail = 0x2000, kUsed = 0x3000;

struct Ring {
  const memory::GuestMemory& mem;
  uint16_t size;
  uint16_t avail_idx = 0;

  void desc(uint16_t i, uint64_t addr, uint32_t len, uint16_t flags = 0, uint16_t next = 0) {
    uint8_t d[16];
    std::memcpy(d, &addr, 8);
    std::memcpy(d + 8, &len, 4);
    std::memcpy(d + 12, &flags, 2);
    std::memcpy(d + 14, &next, 2);
    mem.write(kDesc + 16ULL * i, d, 16);
  }
  void publish(uint16_t head) {
    mem.write_obj(kAvail + 4 + 2ULL * (avail_idx % size), head);
    avail_idx++;
    mem.write_obj(kAvail + 2, avail_idx);
  }
};

devices::Virtqueue make_queue(const memory::GuestMemory& mem, uint16_t size, uint16_t max = 256) {
  devices::Virtqueue q(mem, max);
  q.set_size(size);
  q.set_desc_addr(kDesc);
  q.set_avail_addr(kAvail);
  q.set_used_addr(kUsed);
  std::string why;
  REQUIRE(q.enable(why));
  return q;
}

}  // namespace

TEST_CASE("a normal chain pops as readable then writable segments") {
  auto mem = memory::GuestMemory::anonymous(1 << 20);
  devices::Virtqueue q = make_queue(mem, 16);
  Ring r{mem, 16};
  const char msg[] = "hello, device";
  mem.write(0x10000, msg, sizeof msg);
  r.desc(3, 0x10000, 5, 1, 7);
  r.desc(7, 0x10005, sizeof msg - 5, 1, 2);
  r.desc(2, 0x20000, 100, 2);
  devices::DescChain c;
  std::string why;
  CHECK(q.pop(c, why) == devices::Virtqueue::Pop::Empty);  // nothing published yet
  r.publish(3);
  REQUIRE(q.pop(c, why) == devices::Virtqueue::Pop::Chain);
  CHECK(c.head == 3);
  REQUIRE(c.segments.size() == 3);
  CHECK(c.readable_bytes == sizeof msg);
  CHECK(c.writable_bytes == 100);
  CHECK(c.segments[2].writable);

  char out[sizeof msg] = {};
  CHECK(chain_read(mem, c, 0, {reinterpret_cast<uint8_t*>(out), sizeof out}) == sizeof msg);
  CHECK(std::string(out) == msg);
  uint8_t tail[4];
  CHECK(chain_read(mem, c, sizeof msg - 2, tail) == 2);  // clipped at the readable end

  const uint8_t reply[3] = {9, 8, 7};
  CHECK(chain_write(mem, c, 98, reply) == 2);
  uint8_t got[2];
  mem.read(0x20000 + 98, got, 2);
  CHECK(got[0] == 9);
  auto iov = chain_iovecs(mem, c, false, 3, 10);
  REQUIRE(iov.size() == 2);
  CHECK(iov[0].iov_len == 2);
  CHECK(iov[1].iov_len == 8);
  CHECK(iov[0].iov_base == mem.ptr(0x10003, 2));

  q.push_used(c.head, 42);
  uint16_t used_idx = 0;
  uint32_t elem[2];
  mem.read_obj(kUsed + 2, used_idx);
  mem.read(kUsed + 4, elem, 8);
  CHECK(used_idx == 1);
  CHECK(elem[0] == 3);
  CHECK(elem[1] == 42);
  CHECK(q.pop(c, why) == devices::Virtqueue::Pop::Empty);
}

TEST_CASE("undo_pop returns the same chain again and ring indexes wrap") {
  auto mem = memory::GuestMemory::anonymous(1 << 20);
  devices::Virtqueue q = make_queue(mem, 4);
  Ring r{mem, 4};
  devices::DescChain c;
  std::string why;
  for (int round = 0; round < 70000; round += 1000) {  // avail/used idx wrap past 65535
    for (int i = 0; i < 1000; i++) {
      r.desc(0, 0x10000, 8, 2);
      r.publish(0);
      REQUIRE(q.pop(c, why) == devices::Virtqueue::Pop::Chain);
      if (i == 0) {
        q.undo_pop();
        REQUIRE(q.pop(c, why) == devices::Virtqueue::Pop::Chain);
      }
      q.push_used(c.head, 8);
    }
  }
  CHECK(q.state().next_used == static_cast<uint16_t>(70000));
}

TEST_CASE("NO_INTERRUPT in the avail flags suppresses interrupts") {
  auto mem = memory::GuestMemory::anonymous(1 << 20);
  devices::Virtqueue q = make_queue(mem, 8);
  CHECK(q.needs_interrupt());
  mem.write_obj(kAvail, uint16_t{1});
  CHECK_FALSE(q.needs_interrupt());
}

TEST_CASE("enable rejects bad sizes and misplaced rings") {
  auto mem = memory::GuestMemory::anonymous(1 << 20);
  std::string why;
  auto try_cfg = [&](uint16_t size, uint64_t d, uint64_t a, uint64_t u) {
    devices::Virtqueue q(mem, 256);
    q.set_size(size);
    q.set_desc_addr(d);
    q.set_avail_addr(a);
    q.set_used_addr(u);
    return q.enable(why);
  };
  CHECK(try_cfg(256, kDesc, kAvail + 0x1000, kUsed + 0x2000));
  CHECK_FALSE(try_cfg(0, kDesc, kAvail, kUsed));
  CHECK_FALSE(try_cfg(12, kDesc, kAvail, kUsed));           // not a power of two
  CHECK_FALSE(try_cfg(512, kDesc, kAvail, kUsed));          // above the maximum
  CHECK_FALSE(try_cfg(16, (1 << 20) - 16, kAvail, kUsed));  // table runs past RAM
  CHECK_FALSE(try_cfg(16, kDesc, (1 << 20) - 8, kUsed));
  CHECK_FALSE(try_cfg(16, kDesc, kAvail, 0xfffffffffffffff0ULL));
  CHECK_FALSE(try_cfg(16, kDesc + 8, kAvail, kUsed));  // misaligned
  CHECK_FALSE(try_cfg(16, kDesc, kAvail + 1, kUsed));
  CHECK_FALSE(try_cfg(16, kDesc, kAvail, kUsed + 2));
  devices::Virtqueue q(mem, 256);
  devices::DescChain c;
  CHECK(q.pop(c, why) == devices::Virtqueue::Pop::Empty);  // never enabled: nothing read
}

TEST_CASE("hostile chains are reported as Bad") {
  auto mem = memory::GuestMemory::anonymous(1 << 20);
  devices::Virtqueue q = make_queue(mem, 8);
  Ring r{mem, 8};
  devices::DescChain c;
  std::string why;
  auto pop_bad = [&](uint16_t head) {
    r.publish(head);
    auto res = q.pop(c, why);
    INFO(why);
    return res == devices::Virtqueue::Pop::Bad;
  };

  SUBCASE("loop") {
    r.desc(0, 0x10000, 8, 1, 1);
    r.desc(1, 0x10000, 8, 1, 0);
    CHECK(pop_bad(0));
    CHECK(why.find("loop") != std::string::npos);
  }
  SUBCASE("self loop") {
    r.desc(5, 0x10000, 8, 1, 5);
    CHECK(pop_bad(5));
  }
  SUBCASE("next index out of range") {
    r.desc(0, 0x10000, 8, 1, 8);
    CHECK(pop_bad(0));
  }
  SUBCASE("head out of range") {
    CHECK(pop_bad(200));
  }
  SUBCASE("buffer outside RAM") {
    r.desc(0, 1 << 20, 1, 0);
    CHECK(pop_bad(0));
  }
  SUBCASE("buffer straddling the end of RAM") {
    r.desc(0, (1 << 20) - 4, 8, 0);
    CHECK(pop_bad(0));
  }
  SUBCASE("huge length") {
    r.desc(0, 0, 0xffffffffu, 0);
    CHECK(pop_bad(0));
  }
  SUBCASE("address wraps around") {
    r.desc(0, 0xfffffffffffffff0ULL, 0x100, 0);
    CHECK(pop_bad(0));
  }
  SUBCASE("readable after writable") {
    r.desc(0, 0x10000, 8, 1 | 2, 1);
    r.desc(1, 0x10000, 8, 0);
    CHECK(pop_bad(0));
  }
  SUBCASE("indirect") {
    r.desc(0, 0x10000, 16, 4);
    CHECK(pop_bad(0));
  }
  SUBCASE("avail idx claims more than the queue holds") {
    mem.write_obj(kAvail + 2, uint16_t{9});
    CHECK(q.pop(c, why) == devices::Virtqueue::Pop::Bad);
  }
}

TEST_CASE("a chain totalling more than 4 GiB is rejected") {
  auto mem = memory::GuestMemory::anonymous(128 << 20);
  devices::Virtqueue q = make_queue(mem, 64);
  Ring r{mem, 64};
  for (uint16_t i = 0; i < 40; i++) r.desc(i, 0, 128 << 20, 1, static_cast<uint16_t>(i + 1));
  r.publish(0);
  devices::DescChain c;
  std::string why;
  CHECK(q.pop(c, why) == devices::Virtqueue::Pop::Bad);
  CHECK(why.find("4 GiB") != std::string::npos);
}

TEST_CASE("queue state round-trips and invalid state is refused") {
  auto mem = memory::GuestMemory::anonymous(1 << 20);
  devices::Virtqueue q = make_queue(mem, 16);
  Ring r{mem, 16};
  r.desc(0, 0x10000, 4, 2);
  r.publish(0);
  devices::DescChain c;
  std::string why;
  REQUIRE(q.pop(c, why) == devices::Virtqueue::Pop::Chain);
  q.push_used(0, 4);
  devices::VirtqueueState s = q.state();

  devices::Virtqueue q2(mem, 256);
  REQUIRE(q2.set_state(s, why));
  CHECK(q2.ready());
  CHECK(q2.state().next_avail == 1);
  CHECK(q2.state().next_used == 1);
  CHECK(q2.pop(c, why) == devices::Virtqueue::Pop::Empty);

  s.used = 1 << 20;
  devices::Virtqueue q3(mem, 256);
  CHECK_FALSE(q3.set_state(s, why));
  CHECK_FALSE(q3.ready());
}
