// Unit tests for vmm/snapshot, the vmstate format: encode/decode round trip, header checks,
// truncation, sections (missing, malformed, unknown, duplicated) and the files. No KVM needed:
// the state is synthetic.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "proto/wire.h"
#include "support/checks.h"
#include "support/temp_dir.h"
#include "util/crc32.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "vmm/snapshot.h"

using namespace space;
using namespace space::vmm;
using namespace space::vmm::snapshot;

namespace {

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
    v.cpuid = {test::cpuid_leaf(1, 0, 0, s.cpu.leaf1_ecx, s.cpu.leaf1_edx),
               test::cpuid_leaf(7, 0, 1, 2, 3)};
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
    img[8] = static_cast<uint8_t>(kFormatVersion + 1);
    CHECK(decode_error(img).find("format version " + std::to_string(kFormatVersion + 1)) !=
          std::string::npos);
  }
  SUBCASE("an older version (format 1: no image slot) is refused too") {
    img[8] = 1;
    CHECK(decode_error(img).find("format version 1") != std::string::npos);
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
