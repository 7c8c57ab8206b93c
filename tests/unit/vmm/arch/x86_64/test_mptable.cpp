// Unit tests for the MP table: signatures, checksums, and one processor entry per vCPU.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "util/error.h"
#include "vmm/arch/x86_64/boot.h"
#include "vmm/arch/x86_64/mptable.h"

using namespace space;
using namespace space::memory;
using namespace space::vmm;
using namespace space::vmm::x86;

TEST_CASE("MP table is well formed for 1 and 4 vCPUs") {
  for (int n : {1, 4}) {
    auto mem = memory::GuestMemory::anonymous(64 << 20);
    size_t len = write_mptable(mem, n);
    std::vector<uint8_t> b(len);
    REQUIRE(mem.read(kMpTable, b.data(), len));
    CHECK(std::memcmp(b.data(), "_MP_", 4) == 0);
    CHECK(mp_checksum(b.data(), 16) == 0);
    uint32_t table;
    std::memcpy(&table, b.data() + 4, 4);
    CHECK(table == kMpTable + 16);
    const uint8_t* t = b.data() + 16;
    CHECK(std::memcmp(t, "PCMP", 4) == 0);
    uint16_t tlen, count;
    std::memcpy(&tlen, t + 4, 2);
    std::memcpy(&count, t + 34, 2);
    CHECK(16 + tlen == len);
    CHECK(mp_checksum(t, tlen) == 0);
    // Entries: n processors, bus, ioapic, 16 io interrupts, 2 local interrupts.
    CHECK(count == n + 1 + 1 + 16 + 2);
    const uint8_t* e = t + 44;
    int cpus = 0;
    for (int i = 0; i < n; i++, e += 20) {
      CHECK(e[0] == 0);
      CHECK(e[1] == i);
      CHECK(((e[3] & 2) != 0) == (i == 0));
      cpus++;
    }
    CHECK(cpus == n);
    CHECK(e[0] == 1);  // bus
    e += 8;
    CHECK(e[0] == 2);  // ioapic
    CHECK(e[1] == n);  // its id follows the CPUs'
    CHECK(kMpTable + len <= kHighMem);
  }
}

TEST_CASE("MP table rejects bad vCPU counts") {
  auto mem = memory::GuestMemory::anonymous(64 << 20);
  CHECK_THROWS_AS(write_mptable(mem, 0), Error);
  CHECK_THROWS_AS(write_mptable(mem, kMaxVcpusMpTable + 1), Error);
}
