// Unit tests for the vector state keeper: the layout it derives from CPUID, the copies between a
// KVM XSAVE image and a task's area, its port answers, and its handling of hostile addresses.
// The KVM round trip itself is covered by tests/integration/45_vector_state.sh.
#include <doctest/doctest.h>

#include <cstring>

#include "vmm/arch/x86_64/vector_state.h"

using namespace space;
using namespace space::vmm::x86;
using space::vmm::VcpuFd;

namespace {
kvm_cpuid_entry2 leaf_d(uint32_t index, uint32_t eax, uint32_t ebx, uint32_t edx = 0) {
  kvm_cpuid_entry2 e{};
  e.function = 0xd;
  e.index = index;
  e.eax = eax;
  e.ebx = ebx;
  e.edx = edx;
  return e;
}

// CPUID leaf 0xD of a host with AVX, AVX-512 and PKRU (the standard offsets).
std::vector<kvm_cpuid_entry2> avx512_host() {
  return {leaf_d(0, 0x2e7, 2696), leaf_d(2, 256, 576),   leaf_d(5, 64, 1088),
          leaf_d(6, 512, 1152),   leaf_d(7, 1024, 1664), leaf_d(9, 8, 2688)};
}

uint64_t bv_of(const std::vector<uint8_t>& img) {
  uint64_t bv;
  std::memcpy(&bv, img.data() + kXstateBvOffset, 8);
  return bv;
}
void set_bv(std::vector<uint8_t>& img, uint64_t bv) {
  std::memcpy(img.data() + kXstateBvOffset, &bv, 8);
}
bool all_equal(const std::vector<uint8_t>& v, size_t off, size_t len, uint8_t b) {
  for (size_t i = off; i < off + len; i++)
    if (v[i] != b) return false;
  return true;
}

VcpuFd no_vcpu() {
  return VcpuFd(Fd(), Mapping(), 0);
}
}  // namespace

TEST_CASE("vector layout: AVX and AVX-512 kept at their CPUID offsets, PKRU and MPX not") {
  VectorLayout l = vector_layout(avx512_host(), 4096);
  REQUIRE(l.components.size() == 4);
  CHECK(l.mask == ((1u << 2) | (1u << 5) | (1u << 6) | (1u << 7)));
  CHECK(l.components[0].index == 2);
  CHECK(l.components[0].offset == 576);
  CHECK(l.components[0].size == 256);
  CHECK(l.components[3].index == 7);
  CHECK(l.area_size == 2688);
}

TEST_CASE("vector layout: an AVX-only host needs 832 bytes; no leaf 0xD keeps nothing") {
  VectorLayout l = vector_layout(std::vector{leaf_d(0, 0x7, 832), leaf_d(2, 256, 576)}, 4096);
  CHECK(l.mask == (1u << 2));
  CHECK(l.area_size == 832);
  CHECK(vector_layout(std::vector<kvm_cpuid_entry2>{}, 4096).area_size == 0);
  // Only x87 and SSE usable: nothing beyond FXSAVE to keep.
  CHECK(vector_layout(std::vector{leaf_d(0, 0x3, 576)}, 4096).area_size == 0);
}

TEST_CASE("vector layout: components that do not fit, or are described wrongly, are left out") {
  // An image of 1 KiB holds AVX but not AVX-512.
  VectorLayout small = vector_layout(avx512_host(), 1024);
  CHECK(small.mask == (1u << 2));
  CHECK(small.area_size == 832);
  // A component overlapping the legacy area or the header, or with size 0, or missing.
  std::vector bad{leaf_d(0, 0xe7, 0), leaf_d(2, 256, 100), leaf_d(5, 0, 1088),
                  leaf_d(6, 512, 1152)};
  VectorLayout l = vector_layout(bad, 4096);
  CHECK(l.mask == (1u << 6));
  CHECK(l.area_size == 1664);
  // Beyond one 4 KiB page, whatever the image size.
  CHECK(vector_layout(std::vector{leaf_d(0, 0x7, 0), leaf_d(2, 256, 4000)}, 8192).area_size == 0);
}

TEST_CASE("vector state: a save then a load moves the components and their bits, nothing else") {
  VectorLayout l = vector_layout(avx512_host(), 4096);
  std::vector<uint8_t> live(4096, 0);
  std::memset(live.data(), 0x11, 512);         // legacy area: FXSAVE's business
  std::memset(live.data() + 576, 0xa5, 256);   // ymm upper halves
  std::memset(live.data() + 1152, 0x5a, 512);  // zmm upper halves
  set_bv(live, 0x3 | (1u << 2) | (1u << 6) | (1u << 9));

  std::vector<uint8_t> area(l.area_size, 0xee);  // stale bytes from an earlier task
  std::memset(area.data(), 0x22, 512);
  store_components(l, live, area);
  CHECK(all_equal(area, 0, 512, 0x22));  // legacy area untouched
  CHECK(all_equal(area, 576, 256, 0xa5));
  CHECK(all_equal(area, 1088, 64, 0x00));  // opmask not in use: zeroed, not left stale
  CHECK(all_equal(area, 1152, 512, 0x5a));
  CHECK(all_equal(area, 1664, 1024, 0x00));
  CHECK((bv_of(area) & l.mask) == ((1u << 2) | (1u << 6)));

  // Another task ran meanwhile: its state is in the vCPU.
  std::vector<uint8_t> other(4096, 0x77);
  set_bv(other, 0x3 | (1u << 2) | (1u << 5) | (1u << 7) | (1u << 9));
  load_components(l, area, other);
  CHECK(all_equal(other, 0, 512, 0x77));  // legacy area untouched
  CHECK(all_equal(other, 576, 256, 0xa5));
  CHECK(all_equal(other, 1088, 64, 0x00));  // bit clear in the area: init state
  CHECK(all_equal(other, 1152, 512, 0x5a));
  CHECK(all_equal(other, 1664, 1024, 0x00));
  CHECK(all_equal(other, 2688, 8, 0x77));  // PKRU is not ours
  CHECK(bv_of(other) == (0x3 | (1u << 2) | (1u << 6) | (1u << 9)));
}

TEST_CASE("vector state: a fresh (zeroed) area loads init state; stray bits in it are ignored") {
  VectorLayout l = vector_layout(avx512_host(), 4096);
  std::vector<uint8_t> area(l.area_size, 0);
  set_bv(area, ~uint64_t(0) & ~l.mask);  // every bit but ours: a hostile or garbled header
  std::vector<uint8_t> live(4096, 0x33);
  set_bv(live, 0x3 | l.mask);
  load_components(l, area, live);
  CHECK(bv_of(live) == 0x3);
  CHECK(all_equal(live, 576, 256, 0));
  CHECK(all_equal(live, 1088, 2688 - 1088, 0));
  CHECK(all_equal(live, 0, 512, 0x33));
}

TEST_CASE("vector keeper: the probe answers only once configured, with 4-byte reads") {
  auto mem = memory::GuestMemory::anonymous(1 << 20);
  VectorStateKeeper k(mem);
  auto read32 = [&](uint16_t port) {
    uint8_t b[4];
    k.read(port, b);
    uint32_t v;
    std::memcpy(&v, b, 4);
    return v;
  };
  CHECK(VectorStateKeeper::claims(0x5f0));
  CHECK(VectorStateKeeper::claims(0x5f7));
  CHECK_FALSE(VectorStateKeeper::claims(0x5f8));
  CHECK_FALSE(VectorStateKeeper::claims(0x3f8));
  CHECK(read32(VectorStateKeeper::kPortSave) == 0);
  CHECK(read32(VectorStateKeeper::kPortRestore) == 0);
  k.configure(vector_layout(avx512_host(), 4096), 4096);
  CHECK(read32(VectorStateKeeper::kPortSave) == VectorStateKeeper::kMagic);
  CHECK(read32(VectorStateKeeper::kPortRestore) == 2688);
  CHECK(read32(0x5f2) == 0xffffffffu);
  uint8_t one = 0;
  k.read(VectorStateKeeper::kPortSave, {&one, 1});
  CHECK(one == 0xff);
  // A layout larger than the image KVM gives is no layout.
  k.configure(vector_layout(avx512_host(), 4096), 1024);
  CHECK(read32(VectorStateKeeper::kPortSave) == 0);
}

TEST_CASE("vector keeper: addresses outside guest RAM are ignored; KVM failures are reported") {
  auto mem = memory::GuestMemory::anonymous(1 << 20);
  VectorStateKeeper k(mem);
  k.configure(vector_layout(avx512_host(), 4096), 4096);
  VcpuFd none = no_vcpu();  // any KVM call on it fails (EBADF)
  auto out32 = [&](uint16_t port, uint64_t gpa) {
    uint32_t v = static_cast<uint32_t>(gpa >> 6);
    return k.write(none, port, {reinterpret_cast<uint8_t*>(&v), 4});
  };
  // Past the end, or straddling it: ignored before any KVM call.
  CHECK(out32(VectorStateKeeper::kPortSave, 1 << 20).empty());
  CHECK(out32(VectorStateKeeper::kPortRestore, (1 << 20) - 1024).empty());
  CHECK(out32(VectorStateKeeper::kPortRestore, uint64_t(0xffffffff) << 6).empty());
  // Wrong widths and ports: ignored.
  uint8_t b = 0;
  CHECK(k.write(none, VectorStateKeeper::kPortSave, {&b, 1}).empty());
  CHECK(out32(0x5f2, 0).empty());
  // In range: KVM is asked, and its failure is an error the vCPU reports.
  std::string err = out32(VectorStateKeeper::kPortSave, 4096);
  CHECK(err.find("KVM_GET_XSAVE") != std::string::npos);
  // The guest's memory was not touched on the failed path.
  CHECK(all_equal(std::vector<uint8_t>(mem.host_base() + 4096, mem.host_base() + 4096 + 2688), 0,
                  2688, 0));
}
