// MP table builder; see mptable.h. Structures laid out per the MP spec 1.4, chapter 4.
#include "vmm/arch/x86_64/mptable.h"

#include <cstring>
#include <vector>

#include "util/error.h"
#include "vmm/arch/x86_64/boot.h"

namespace space::vmm::x86 {
namespace {

class Bytes {
 public:
  void u8(uint8_t v) { b_.push_back(v); }
  void u16(uint16_t v) { raw(&v, 2); }
  void u32(uint32_t v) { raw(&v, 4); }
  void str(const char* s, size_t n) {  // fixed-width, space padded
    size_t l = std::strlen(s);
    for (size_t i = 0; i < n; i++) b_.push_back(i < l ? static_cast<uint8_t>(s[i]) : ' ');
  }
  void zeros(size_t n) { b_.insert(b_.end(), n, 0); }
  void raw(const void* p, size_t n) {
    auto* c = static_cast<const uint8_t*>(p);
    b_.insert(b_.end(), c, c + n);
  }
  std::vector<uint8_t>& data() { return b_; }

 private:
  std::vector<uint8_t> b_;
};

constexpr uint8_t kEntryProcessor = 0, kEntryBus = 1, kEntryIoApic = 2, kEntryIoInt = 3,
                  kEntryLocalInt = 4;
constexpr uint8_t kIntTypeInt = 0, kIntTypeNmi = 1, kIntTypeExtInt = 3;

// The configuration table's entries: one per vCPU, the ISA bus, the I/O APIC, the 16 ISA IRQs
// routed to its pins, and the local APICs' LINT0 (ExtINT) and LINT1 (NMI). Returns their count.
uint16_t write_entries(Bytes& e, int vcpus, uint8_t ioapic_id) {
  uint16_t count = 0;
  for (int i = 0; i < vcpus; i++) {
    e.u8(kEntryProcessor);
    e.u8(static_cast<uint8_t>(i));  // local APIC id
    e.u8(0x14);                     // local APIC version
    e.u8(i == 0 ? 0x3 : 0x1);       // enabled, bootstrap processor
    e.u32(0x600);                   // CPU signature (family 6)
    e.u32(0x201);                   // features: FPU, APIC
    e.zeros(8);
    count++;
  }
  e.u8(kEntryBus);
  e.u8(0);
  e.str("ISA", 6);
  count++;
  e.u8(kEntryIoApic);
  e.u8(ioapic_id);
  e.u8(0x11);  // version
  e.u8(0x1);   // enabled
  e.u32(static_cast<uint32_t>(kIoApicAddr));
  count++;
  for (uint8_t irq = 0; irq < 16; irq++) {
    e.u8(kEntryIoInt);
    e.u8(kIntTypeInt);
    e.u16(0);  // conforms to bus: ISA is edge, active high
    e.u8(0);   // source bus
    e.u8(irq);
    e.u8(ioapic_id);
    e.u8(irq);
    count++;
  }
  for (uint8_t lint = 0; lint < 2; lint++) {
    e.u8(kEntryLocalInt);
    e.u8(lint == 0 ? kIntTypeExtInt : kIntTypeNmi);
    e.u16(0);
    e.u8(0);
    e.u8(0);
    e.u8(0xff);  // every local APIC
    e.u8(lint);
    count++;
  }
  return count;
}

}  // namespace

uint8_t mp_checksum(const uint8_t* p, size_t len) {
  uint8_t s = 0;
  for (size_t i = 0; i < len; i++) s = static_cast<uint8_t>(s + p[i]);
  return s;
}

size_t write_mptable(const memory::GuestMemory& mem, int vcpus) {
  if (vcpus < 1 || vcpus > kMaxVcpusMpTable)
    fail("MP table: unsupported vCPU count " + std::to_string(vcpus));
  const uint8_t ioapic_id = static_cast<uint8_t>(vcpus);
  const uint64_t table_addr = kMpTable + 16;

  Bytes e;  // entries
  const uint16_t count = write_entries(e, vcpus, ioapic_id);

  Bytes t;  // configuration table header + entries
  t.raw("PCMP", 4);
  t.u16(static_cast<uint16_t>(44 + e.data().size()));
  t.u8(4);  // spec revision 1.4
  t.u8(0);  // checksum, below
  t.str("SPACE", 8);
  t.str("SPACEVM", 12);
  t.u32(0);
  t.u16(0);
  t.u16(count);
  t.u32(static_cast<uint32_t>(kLapicAddr));
  t.u16(0);
  t.u8(0);
  t.u8(0);
  t.raw(e.data().data(), e.data().size());
  t.data()[7] = static_cast<uint8_t>(-mp_checksum(t.data().data(), t.data().size()));

  Bytes f;  // floating pointer
  f.raw("_MP_", 4);
  f.u32(static_cast<uint32_t>(table_addr));
  f.u8(1);  // length in 16-byte units
  f.u8(4);
  f.u8(0);  // checksum, below
  f.zeros(5);
  f.data()[10] = static_cast<uint8_t>(-mp_checksum(f.data().data(), 16));

  size_t total = 16 + t.data().size();
  if (kMpTable + total > kHighMem) fail("MP table too large for its reserved area");
  if (!mem.write(kMpTable, f.data().data(), 16) ||
      !mem.write(table_addr, t.data().data(), t.data().size()))
    fail("MP table outside guest memory");
  return total;
}

}  // namespace space::vmm::x86
