// Unit tests for the snapshot format (vmstate encode/decode and its validation), the sparse
// memory file, the CPU feature check and CRC-32. No KVM needed: the state is synthetic.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "memory/guest_memory.h"
#include "proto/wire.h"
#include "support/temp_dir.h"
#include "util/crc32.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "vmm/arch/x86_64/cpu_features.h"
#include "vmm/snapshot.h"
#include "vmm/snapshot_memory.h"

using namespace space;
using namespace space::memory;
using namespace space::vmm;
using namespace space::vmm::snapshot;

namespace {

kvm_cpuid_entry2 leaf(uint32_t fn, uint32_t idx, uint32_t ebx, uint32_t ecx, uint32_t edx) {
  kvm_cpuid_entry2 e{};
  e.function = fn;
  e.index = idx;
  e.ebx = ebx;
  e.ecx = ecx;
  e.edx = edx;
  return e;
}

Snapshot sample(uint32_t vcpus = 1) {
  Snapshot s;
  s.machine.vcpus = vcpus;
  s.machine.memory_bytes = 1 << 20;
  s.machine.cmdline = "console=ttyS0 space.id=t";
  s.machine.devices = {"serial", "virtio-blk0"};
  s.cpu = {0x80202001, 0x178bfbff, 0x219c91a9, 0x00400004, 0x10};
  for (uint32_t i = 0; i < vcpus; i++) {
    vmm::x86::VcpuState v;
    v.regs.rip = 0xffffffff81000000ULL + i;
    v.regs.rsp = 0x1234;
    v.sregs.cr0 = 0x80050033;
    v.sregs.efer = 0xd01;
    v.fpu.fcw = 0x37f;
    v.xsave.assign(4096, 0);
    v.xsave[0] = 0x7f;
    v.has_xcrs = true;
    v.xcrs.nr_xcrs = 1;
    v.xcrs.xcrs[0].value = 7;
    v.lapic.regs[0x20] = static_cast<char>(i);
    v.msrs = {{0x10, 0, 123456}, {0xc0000080, 0, 0xd01}};
    v.mp_state.mp_state = KVM_MP_STATE_RUNNABLE;
    v.events.nmi.masked = 1;
    v.debugregs.dr7 = 0x400;
    v.cpuid = {leaf(1, 0, 0, s.cpu.leaf1_ecx, s.cpu.leaf1_edx), leaf(7, 0, 1, 2, 3)};
    s.vcpus.push_back(v);
  }
  s.vm.pic_master.chip_id = KVM_IRQCHIP_PIC_MASTER;
  s.vm.pic_slave.chip_id = KVM_IRQCHIP_PIC_SLAVE;
  s.vm.ioapic.chip_id = KVM_IRQCHIP_IOAPIC;
  s.vm.ioapic.chip.ioapic.base_address = 0xfec00000;
  s.vm.pit.channels[0].count = 0x4e20;
  s.vm.clock = 987654321;
  s.devices = {{"serial", {1, 2, 3}}, {"virtio-blk0", {}}};
  return s;
}

std::string decode_error(std::span<const uint8_t> img) {
  try {
    decode(img, "/x/vmstate");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).rfind("snapshot /x/vmstate: ", 0) == 0);
    CHECK(e.hint().find("rebuild") != std::string::npos);
    return e.what();
  }
  FAIL("decode accepted a bad image");
  return {};
}

using Sections = std::vector<std::pair<std::string, std::vector<uint8_t>>>;

Sections split(const std::vector<uint8_t>& img) {
  proto::Reader r(std::span<const uint8_t>(img).subspan(kHeaderSize));
  Sections out;
  uint32_t n = r.u32();
  for (uint32_t i = 0; i < n; i++) {
    std::string name = r.str();
    auto b = r.bytes();
    out.emplace_back(name, std::vector<uint8_t>(b.begin(), b.end()));
  }
  return out;
}

// A well-formed header (right CRC) around the given sections.
std::vector<uint8_t> join(const Sections& sections) {
  proto::Writer p;
  p.u32(static_cast<uint32_t>(sections.size()));
  for (const auto& [name, body] : sections) {
    p.str(name);
    p.bytes(body);
  }
  auto& payload = p.buffer();
  proto::Writer h;
  for (char c : kMagic) h.u8(static_cast<uint8_t>(c));
  h.u32(kFormatVersion);
  h.u32(0);
  h.u64(payload.size());
  h.u32(crc32(payload));
  auto out = h.buffer();
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

}  // namespace

TEST_CASE("crc32: standard check value, incremental") {
  const char* s = "123456789";
  auto b = std::span(reinterpret_cast<const uint8_t*>(s), 9);
  CHECK(crc32(b) == 0xCBF43926u);
  CHECK(crc32(b.subspan(4), crc32(b.first(4))) == 0xCBF43926u);
  CHECK(crc32({}) == 0);
}

TEST_CASE("vmstate: round trip") {
  Snapshot s = sample(2);
  auto img = encode(s);
  REQUIRE(img.size() > kHeaderSize);
  CHECK(std::memcmp(img.data(), "SPACESNP", 8) == 0);
  Snapshot d = decode(img, "mem");
  CHECK(d.machine.vcpus == 2);
  CHECK(d.machine.memory_bytes == s.machine.memory_bytes);
  CHECK(d.machine.cmdline == s.machine.cmdline);
  CHECK(d.machine.devices == s.machine.devices);
  CHECK(d.cpu == s.cpu);
  REQUIRE(d.vcpus.size() == 2);
  for (size_t i = 0; i < 2; i++) {
    const auto &a = s.vcpus[i], &b = d.vcpus[i];
    CHECK(std::memcmp(&a.regs, &b.regs, sizeof a.regs) == 0);
    CHECK(std::memcmp(&a.sregs, &b.sregs, sizeof a.sregs) == 0);
    CHECK(std::memcmp(&a.fpu, &b.fpu, sizeof a.fpu) == 0);
    CHECK(a.xsave == b.xsave);
    CHECK(b.has_xcrs);
    CHECK(b.xcrs.xcrs[0].value == 7);
    CHECK(std::memcmp(&a.lapic, &b.lapic, sizeof a.lapic) == 0);
    REQUIRE(b.msrs.size() == 2);
    CHECK(b.msrs[0].index == 0x10);
    CHECK(b.msrs[0].data == 123456);
    CHECK(b.mp_state.mp_state == KVM_MP_STATE_RUNNABLE);
    CHECK(b.events.nmi.masked == 1);
    CHECK(b.debugregs.dr7 == 0x400);
    REQUIRE(b.cpuid.size() == 2);
    CHECK(b.cpuid[1].function == 7);
    CHECK(b.cpuid[1].edx == 3);
  }
  CHECK(d.vm.ioapic.chip.ioapic.base_address == 0xfec00000);
  CHECK(d.vm.pit.channels[0].count == 0x4e20);
  CHECK(d.vm.clock == 987654321);
  REQUIRE(d.devices.size() == 2);
  CHECK(d.devices[0].name == "serial");
  CHECK(d.devices[0].data == std::vector<uint8_t>{1, 2, 3});
  CHECK(d.devices[1].data.empty());
}

TEST_CASE("vmstate: header checks") {
  auto img = encode(sample());
  SUBCASE("bad magic") {
    img[0] = 'X';
    CHECK(decode_error(img).find("bad magic") != std::string::npos);
  }
  SUBCASE("future version") {
    img[8] = 2;
    CHECK(decode_error(img).find("format version 2") != std::string::npos);
  }
  SUBCASE("unknown flags") {
    img[12] = 1;
    CHECK(decode_error(img).find("flags") != std::string::npos);
  }
  SUBCASE("CRC mismatch") {
    img[img.size() / 2] ^= 0x40;
    CHECK(decode_error(img).find("checksum") != std::string::npos);
  }
  SUBCASE("trailing bytes") {
    img.push_back(0);
    CHECK(decode_error(img).find("trailing") != std::string::npos);
  }
}

TEST_CASE("vmstate: truncated anywhere") {
  auto img = encode(sample());
  for (size_t cut : {size_t(0), size_t(7), kHeaderSize - 1, kHeaderSize, kHeaderSize + 3,
                     img.size() / 2, img.size() - 1}) {
    CAPTURE(cut);
    std::vector<uint8_t> t(img.begin(), img.begin() + static_cast<ptrdiff_t>(cut));
    CHECK(decode_error(t).find("truncated") != std::string::npos);
  }
}

TEST_CASE("vmstate: sections") {
  auto parts = split(encode(sample()));
  CHECK(decode(join(parts), "ok").vcpus.size() == 1);  // the test's own re-encoding is faithful

  for (const char* name : {"machine", "cpu", "vcpu/0", "vm", "device/serial"}) {
    CAPTURE(name);
    Sections p = parts;
    std::erase_if(p, [&](const auto& s) { return s.first == name; });
    CHECK(decode_error(join(p)).find(std::string("section '") + name + "' is missing") !=
          std::string::npos);
  }
  SUBCASE("malformed body") {
    for (auto& s : parts)
      if (s.first == "cpu") s.second.resize(3);
    CHECK(decode_error(join(parts)).find("section 'cpu' is malformed") != std::string::npos);
  }
  SUBCASE("extra bytes in a body") {
    for (auto& s : parts)
      if (s.first == "vm") s.second.push_back(0);
    CHECK(decode_error(join(parts)).find("section 'vm' is malformed") != std::string::npos);
  }
  SUBCASE("wrong struct size") {
    for (auto& s : parts)
      if (s.first == "vcpu/0") s.second[0] ^= 1;  // the regs blob's length
    CHECK(decode_error(join(parts)).find("section 'vcpu/0' is malformed") != std::string::npos);
  }
  SUBCASE("unknown section") {
    parts.emplace_back("gpu", std::vector<uint8_t>{1});
    CHECK(decode_error(join(parts)).find("unexpected section 'gpu'") != std::string::npos);
  }
  SUBCASE("duplicate section") {
    parts.push_back(parts[0]);
    CHECK(decode_error(join(parts)).find("twice") != std::string::npos);
  }
  SUBCASE("absurd vCPU count") {
    Snapshot s = sample();
    s.machine.vcpus = 100000;
    CHECK(decode_error(encode(s)).find("vCPU count") != std::string::npos);
  }
}

TEST_CASE("vmstate: files") {
  test::TempDir d("snap");
  std::string p = d.path + "/vmstate";
  size_t n = write_vmstate(p, sample());
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  CHECK(static_cast<size_t>(st.st_size) == n);
  CHECK(read_vmstate(p).machine.cmdline == "console=ttyS0 space.id=t");
  std::string missing = "snapshot " + d.path + "/nope";
  CHECK_THROWS_WITH_AS(read_vmstate(d.path + "/nope"), doctest::Contains(missing.c_str()), Error);
}

TEST_CASE("memory file: sparse, exact, size-checked") {
  test::TempDir d("snap");
  const uint64_t size = 64 * 4096;
  memory::GuestMemory mem = memory::GuestMemory::anonymous(size);
  uint8_t one = 1;
  REQUIRE(mem.write(0, &one, 1));
  REQUIRE(mem.write(5 * 4096 + 4095, &one, 1));  // last byte of page 5
  for (uint64_t pg = 10; pg < 13; pg++) REQUIRE(mem.write(pg * 4096 + 100, &one, 1));
  REQUIRE(mem.write(size - 1, &one, 1));

  std::string p = d.path + "/memory";
  auto stats = write_memory_file(p, {mem.host_base(), mem.size()});
  CHECK(stats.size == size);
  CHECK(stats.data_bytes == 6 * 4096);
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) == size);
  CHECK(static_cast<uint64_t>(st.st_blocks) * 512 < size / 2);  // holes where pages were zero

  Fd fd = open_memory_file(p, size);
  memory::GuestMemory back = memory::GuestMemory::from_file(fd.get(), size);
  CHECK(std::memcmp(back.host_base(), mem.host_base(), size) == 0);
  CHECK_THROWS_WITH_AS(open_memory_file(p, size * 2), doctest::Contains("memory file is"), Error);
  CHECK_THROWS_AS(open_memory_file(d.path + "/nope", size), Error);
  // No temp files left behind.
  CHECK(fs::list_dir(d.path).size() == 1);
}

TEST_CASE("memory diff: pagemap tells written pages of a private file mapping") {
  test::TempDir d("snap");
  const uint64_t size = 16 * 4096;
  std::string base = d.path + "/base";
  {
    std::vector<uint8_t> bytes(size, 0x5a);
    fs::write_file_atomic(base, std::string(bytes.begin(), bytes.end()), 0600);
  }
  Fd fd = open_memory_file(base, size);
  memory::GuestMemory mem = memory::GuestMemory::from_file(fd.get(), size);
  volatile uint8_t sink = mem.host_base()[1 * 4096];  // read: stays a file page
  (void)sink;
  uint8_t two = 2;
  REQUIRE(mem.write(3 * 4096 + 7, &two, 1));  // written: anonymous now
  std::vector<uint8_t> zero(4096, 0);
  REQUIRE(mem.write(9 * 4096, zero.data(), zero.size()));  // written with zeros
  auto map = read_pagemap({mem.host_base(), mem.size()});
  REQUIRE(map.size() == 16);
  for (size_t i = 0; i < map.size(); i++) CHECK(page_written(map[i]) == (i == 3 || i == 9));

  // The diff (or, where the filesystem cannot reflink, the whole file) reads back as RAM does.
  bool diff = true;
  auto st = write_memory_diff(d.path + "/memory", {mem.host_base(), mem.size()},
                              memory_base_of(fd.get(), base), &diff);
  CHECK(st.size == size);
  if (diff) CHECK(st.data_bytes == 4096);  // page 3; page 9 became a hole
  Fd back_fd = open_memory_file(d.path + "/memory", size);
  memory::GuestMemory back = memory::GuestMemory::from_file(back_fd.get(), size);
  CHECK(std::memcmp(back.host_base(), mem.host_base(), size) == 0);

  // A base replaced since it was mapped is not used as one.
  MemoryBase stale = memory_base_of(fd.get(), base);
  stale.ino += 1;
  write_memory_diff(d.path + "/memory2", {mem.host_base(), mem.size()}, stale, &diff);
  CHECK_FALSE(diff);
}

TEST_CASE("memory file: zero-page test") {
  std::vector<uint8_t> page(4096, 0);
  CHECK(page_is_zero(page.data()));
  page[4095] = 1;
  CHECK_FALSE(page_is_zero(page.data()));
  page[4095] = 0;
  page[3] = 1;
  CHECK_FALSE(page_is_zero(page.data()));
}

TEST_CASE("cpu features: extraction and the host check") {
  using namespace space::vmm::x86;
  std::vector<kvm_cpuid_entry2> t = {leaf(0, 0, 1, 1, 1), leaf(1, 0, 0, 0xa, 0xb),
                                     leaf(7, 1, 9, 9, 9), leaf(7, 0, 0x20, 0x40, 0x80)};
  CpuFeatures f = cpu_features_of(t);
  CHECK(f.leaf1_ecx == 0xa);
  CHECK(f.leaf1_edx == 0xb);
  CHECK(f.leaf7_ebx == 0x20);  // subleaf 0, not 1
  CHECK(f.leaf7_ecx == 0x40);
  CHECK(f.leaf7_edx == 0x80);

  CpuFeatures need{}, have{};
  need.leaf7_ebx = (1u << 5) | (1u << 16);                // avx2, avx512f
  need.leaf1_ecx = (1u << 31) | (1u << 27) | (1u << 28);  // hypervisor, osxsave: not required; avx
  need.leaf7_edx = 1u;                                    // unnamed bit 0
  have.leaf7_ebx = 1u << 5;
  auto missing = missing_cpu_features(need, have);
  CHECK(missing == std::vector<std::string>{"avx", "avx512f", "cpuid.7.edx bit 0"});
  have = need;
  CHECK(missing_cpu_features(need, have).empty());
  CHECK(missing_cpu_features({}, {}).empty());
}
