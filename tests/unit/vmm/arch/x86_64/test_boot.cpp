// Unit tests for the direct-boot structures: zero page, e820, cmdline, page tables, GDT,
// long-mode registers and the ELF loader (with synthetic ELF files, good and hostile), and the
// initrd placement.
#include <doctest/doctest.h>
#include <elf.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"
#include "vmm/arch/x86_64/boot.h"

using namespace space;
using namespace space::memory;
using namespace space::vmm;
using namespace space::vmm::x86;

namespace {
template <class T>
T at(const memory::GuestMemory& m, uint64_t gpa) {
  T v{};
  REQUIRE(m.read_obj(gpa, v));
  return v;
}

// Writes a minimal ELF64 with one PT_LOAD segment to a temp file.
Fd make_elf(uint64_t paddr, uint64_t filesz, uint64_t memsz, uint16_t machine = EM_X86_64) {
  Fd fd = test::unnamed_file("elf");
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_machine = machine;
  eh.e_entry = paddr;
  eh.e_phoff = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 1;
  Elf64_Phdr ph{};
  ph.p_type = PT_LOAD;
  ph.p_offset = 0x1000;
  ph.p_paddr = paddr;
  ph.p_filesz = filesz;
  ph.p_memsz = memsz;
  std::vector<uint8_t> body(filesz, 0xab);
  write_all(fd.get(), &eh, sizeof eh);
  write_all(fd.get(), &ph, sizeof ph);
  REQUIRE(pwrite(fd.get(), body.data(), body.size(), 0x1000) == static_cast<ssize_t>(filesz));
  return fd;
}
}  // namespace

TEST_CASE("e820 map covers RAM with a reserved hole for the MP table") {
  auto e = e820_map(256ULL << 20);
  REQUIRE(e.size() == 3);
  CHECK(e[0].addr == 0);
  CHECK(e[0].type == 1);
  CHECK(e[0].addr + e[0].size == kMpTable);
  CHECK(e[1].type == 2);
  CHECK(e[1].addr + e[1].size == kHighMem);
  CHECK(e[2].addr == kHighMem);
  CHECK(e[2].addr + e[2].size == (256ULL << 20));
  CHECK_THROWS_AS(e820_map(1 << 20), Error);
}

TEST_CASE("zero page carries the boot protocol header, cmdline and e820") {
  auto mem = memory::GuestMemory::anonymous(64 << 20);
  write_zero_page(mem, 42, 0x3000000, 0x1000, e820_map(mem.size()));
  CHECK(at<uint16_t>(mem, kZeroPage + 0x1fe) == 0xaa55);
  CHECK(at<uint32_t>(mem, kZeroPage + 0x202) == 0x53726448);
  CHECK(at<uint8_t>(mem, kZeroPage + 0x210) == 0xff);
  CHECK(at<uint32_t>(mem, kZeroPage + 0x228) == kCmdline);
  CHECK(at<uint32_t>(mem, kZeroPage + 0x238) == 42);
  CHECK(at<uint32_t>(mem, kZeroPage + 0x218) == 0x3000000);
  CHECK(at<uint32_t>(mem, kZeroPage + 0x21c) == 0x1000);
  CHECK(at<uint8_t>(mem, kZeroPage + 0x1e8) == 3);
  // Third e820 entry: RAM from 1 MiB to the end.
  CHECK(at<uint64_t>(mem, kZeroPage + 0x2d0 + 40) == kHighMem);
  CHECK(at<uint64_t>(mem, kZeroPage + 0x2d0 + 48) == mem.size() - kHighMem);
  CHECK(at<uint32_t>(mem, kZeroPage + 0x2d0 + 56) == 1);
}

TEST_CASE("command line is NUL-terminated and bounded") {
  auto mem = memory::GuestMemory::anonymous(64 << 20);
  write_cmdline(mem, "console=ttyS0 quiet");
  char buf[32] = {};
  REQUIRE(mem.read(kCmdline, buf, 20));
  CHECK(std::string(buf) == "console=ttyS0 quiet");
  CHECK_NOTHROW(write_cmdline(mem, std::string(kCmdlineMax - 1, 'x')));
  CHECK_THROWS_AS(write_cmdline(mem, std::string(kCmdlineMax, 'x')), Error);
}

TEST_CASE("page tables identity-map 4 GiB with 2 MiB pages") {
  auto mem = memory::GuestMemory::anonymous(64 << 20);
  write_page_tables(mem);
  CHECK(at<uint64_t>(mem, kPml4) == (kPdpt | 3));
  CHECK(at<uint64_t>(mem, kPml4 + 8) == 0);
  for (uint64_t g = 0; g < 4; g++)
    CHECK(at<uint64_t>(mem, kPdpt + g * 8) == ((kPd + g * 0x1000) | 3));
  CHECK(at<uint64_t>(mem, kPdpt + 4 * 8) == 0);
  // Walk a few addresses through the tables.
  for (uint64_t addr : {0x0ULL, 0x1000000ULL, 0x7fe00000ULL, 0xffe00000ULL}) {
    uint64_t pdpte = at<uint64_t>(mem, kPdpt + (addr >> 30) * 8);
    uint64_t pde = at<uint64_t>(mem, (pdpte & ~0xfffULL) + ((addr >> 21) & 511) * 8);
    CHECK((pde & 0x83) == 0x83);
    CHECK((pde & ~0x1fffffULL) == addr);
  }
}

TEST_CASE("GDT and long-mode sregs agree") {
  auto mem = memory::GuestMemory::anonymous(64 << 20);
  write_gdt(mem);
  CHECK(at<uint64_t>(mem, kGdtAddr) == 0);
  CHECK(at<uint64_t>(mem, kGdtAddr + kCodeSelector) == 0x00af9b000000ffffULL);
  CHECK(at<uint64_t>(mem, kGdtAddr + kDataSelector) == 0x00cf93000000ffffULL);
  kvm_sregs s{};
  setup_long_mode_sregs(s);
  CHECK(s.cs.selector == kCodeSelector);
  CHECK(s.cs.l == 1);
  CHECK(s.cs.db == 0);
  CHECK(s.ds.selector == kDataSelector);
  CHECK(s.cr3 == kPml4);
  CHECK((s.cr0 & 0x80000001) == 0x80000001);
  CHECK((s.cr4 & 0x20) == 0x20);
  CHECK(s.efer == 0x500);
  kvm_regs r = boot_regs(0x1000000);
  CHECK(r.rip == 0x1000000);
  CHECK(r.rsi == kZeroPage);
  CHECK(r.rflags == 2);
}

TEST_CASE("ELF loader copies segments, zeroes bss and rejects hostile images") {
  auto mem = memory::GuestMemory::anonymous(64 << 20);
  {
    Fd fd = make_elf(0x1000000, 0x2000, 0x3000);
    KernelImage img = load_elf_kernel(mem, fd.get(), "k");
    CHECK(img.entry == 0x1000000);
    CHECK(img.load_end == 0x1003000);
    CHECK(at<uint8_t>(mem, 0x1000000) == 0xab);
    CHECK(at<uint8_t>(mem, 0x1001fff) == 0xab);
    CHECK(at<uint8_t>(mem, 0x1002000) == 0);
  }
  {
    Fd fd = make_elf(63ULL << 20, 0x1000, 0x200000);  // runs past the end of RAM
    CHECK_THROWS_AS(load_elf_kernel(mem, fd.get(), "k"), Error);
  }
  {
    Fd fd = make_elf(~0ULL - 0x10, 0x10, 0x100);  // address overflow
    CHECK_THROWS_AS(load_elf_kernel(mem, fd.get(), "k"), Error);
  }
  {
    Fd fd = make_elf(0x1000000, 0x10, 0x10, EM_AARCH64);
    CHECK_THROWS_AS(load_elf_kernel(mem, fd.get(), "k"), Error);
  }
  {
    Fd fd = test::unnamed_file("notelf");
    write_all(fd.get(), "MZ not an elf file at all, but long enough to read a header ........", 68);
    CHECK_THROWS_AS(load_elf_kernel(mem, fd.get(), "k"), Error);
  }
}

TEST_CASE("initrd goes high, aligned, above the kernel") {
  auto mem = memory::GuestMemory::anonymous(64 << 20);
  Fd fd = test::unnamed_file("initrd");
  std::vector<uint8_t> data(5000, 0x5a);
  write_all(fd.get(), data.data(), data.size());
  uint64_t addr = load_initrd(mem, fd.get(), data.size(), 0x2000000);
  CHECK(addr % 4096 == 0);
  CHECK(addr + data.size() <= mem.size());
  CHECK(at<uint8_t>(mem, addr + 4999) == 0x5a);
  CHECK_THROWS_AS(load_initrd(mem, fd.get(), data.size(), mem.size()), Error);
}
