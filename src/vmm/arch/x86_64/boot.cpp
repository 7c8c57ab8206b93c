// Boot structures for direct 64-bit boot; see boot.h. Offsets into boot_params follow the Linux
// x86 boot protocol (Documentation/x86/zero-page.rst and boot.rst).
#include "vmm/arch/x86_64/boot.h"

#include <elf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace space::vmm::x86 {
namespace {

// boot_params offsets.
constexpr uint64_t kE820Entries = 0x1e8;
constexpr uint64_t kSetupSects = 0x1f1;
constexpr uint64_t kBootFlag = 0x1fe;
constexpr uint64_t kHeader = 0x202;
constexpr uint64_t kVersion = 0x206;
constexpr uint64_t kTypeOfLoader = 0x210;
constexpr uint64_t kLoadFlags = 0x211;
constexpr uint64_t kRamdiskImage = 0x218;
constexpr uint64_t kRamdiskSize = 0x21c;
constexpr uint64_t kCmdLinePtr = 0x228;
constexpr uint64_t kInitrdAddrMax = 0x22c;
constexpr uint64_t kKernelAlignment = 0x230;
constexpr uint64_t kCmdlineSize = 0x238;
constexpr uint64_t kE820Table = 0x2d0;
constexpr size_t kE820Max = 128;

template <class T>
void put(const memory::GuestMemory& mem, uint64_t gpa, T v) {
  if (!mem.write_obj(gpa, v)) fail("boot structure at " + std::to_string(gpa) + " is outside RAM");
}

void pread_exact(int fd, void* dst, size_t len, uint64_t off, const std::string& path) {
  auto* p = static_cast<uint8_t*>(dst);
  while (len > 0) {
    ssize_t n = ::pread(fd, p, len, static_cast<off_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("read " + path);
    }
    if (n == 0) fail(path + ": file is truncated");
    p += n;
    len -= static_cast<size_t>(n);
    off += static_cast<uint64_t>(n);
  }
}

uint64_t gdt_entry(uint16_t flags, uint32_t base, uint32_t limit) {
  return ((uint64_t(base) & 0xff000000ULL) << 32) | ((uint64_t(base) & 0x00ffffffULL) << 16) |
         (uint64_t(limit) & 0xffffULL) | ((uint64_t(limit) & 0xf0000ULL) << 32) |
         ((uint64_t(flags) & 0xf0ffULL) << 40);
}

kvm_segment segment(uint16_t selector, uint16_t flags, uint32_t limit) {
  kvm_segment s{};
  s.base = 0;
  s.limit = limit;
  s.selector = selector;
  s.type = flags & 0xf;
  s.s = (flags >> 4) & 1;
  s.dpl = (flags >> 5) & 3;
  s.present = (flags >> 7) & 1;
  s.avl = (flags >> 12) & 1;
  s.l = (flags >> 13) & 1;
  s.db = (flags >> 14) & 1;
  s.g = (flags >> 15) & 1;
  return s;
}

constexpr uint16_t kCodeFlags = 0xa09b;  // G, L, present, DPL0, code exec/read, accessed
constexpr uint16_t kDataFlags = 0xc093;  // G, D/B, present, DPL0, data read/write, accessed
constexpr uint16_t kTssFlags = 0x808b;   // G, present, busy 64-bit TSS

}  // namespace

KernelImage load_elf_kernel(const memory::GuestMemory& mem, int fd, const std::string& path) {
  Elf64_Ehdr eh;
  pread_exact(fd, &eh, sizeof eh, 0, path);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    fail(path + " is not an ELF file",
         "pass the uncompressed vmlinux (scripts/build-kernel.sh builds one), not a bzImage");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
    fail(path + " is not an x86_64 ELF64 kernel");
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 64)
    fail(path + ": malformed ELF program header table");
  KernelImage img;
  img.entry = eh.e_entry;
  bool loaded = false;
  for (int i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    pread_exact(fd, &ph, sizeof ph, eh.e_phoff + uint64_t(i) * sizeof ph, path);
    if (ph.p_type != PT_LOAD) continue;
    if (ph.p_filesz > ph.p_memsz) fail(path + ": PT_LOAD segment with filesz > memsz");
    uint8_t* dst = mem.ptr(ph.p_paddr, ph.p_memsz);
    if (!dst)
      fail(path + ": kernel segment at " + std::to_string(ph.p_paddr) + " does not fit in " +
               std::to_string(mem.size() >> 20) + " MiB of guest memory",
           "give the sandbox more --memory");
    pread_exact(fd, dst, ph.p_filesz, ph.p_offset, path);
    std::memset(dst + ph.p_filesz, 0, ph.p_memsz - ph.p_filesz);
    img.load_end = std::max(img.load_end, ph.p_paddr + ph.p_memsz);
    loaded = true;
  }
  if (!loaded) fail(path + ": no loadable segments");
  if (!mem.ptr(img.entry, 1)) fail(path + ": entry point outside guest memory");
  return img;
}

uint64_t load_initrd(const memory::GuestMemory& mem, int fd, uint64_t size, uint64_t kernel_end) {
  uint64_t limit = std::min<uint64_t>(mem.size(), 0x7fffffffULL);
  if (size == 0 || size > limit) fail("initrd does not fit in guest memory");
  uint64_t addr = (limit - size) & ~0xfffULL;
  if (addr < kernel_end)
    fail("initrd does not fit in guest memory", "give the sandbox more --memory");
  pread_exact(fd, mem.ptr(addr, size), size, 0, "initrd");
  return addr;
}

std::vector<E820Entry> e820_map(uint64_t mem_size) {
  if (mem_size < kMinMemory) fail("guest memory below the minimum of 32 MiB");
  return {
      {0, kMpTable, 1},
      {kMpTable, kHighMem - kMpTable, 2},
      {kHighMem, mem_size - kHighMem, 1},
  };
}

void write_cmdline(const memory::GuestMemory& mem, const std::string& cmdline) {
  if (cmdline.size() + 1 > kCmdlineMax)
    fail("kernel command line is " + std::to_string(cmdline.size()) + " bytes, over the limit of " +
         std::to_string(kCmdlineMax - 1));
  if (!mem.write(kCmdline, cmdline.c_str(), cmdline.size() + 1))
    fail("command line outside guest memory");
}

void write_zero_page(const memory::GuestMemory& mem, size_t cmdline_len, uint64_t initrd_addr,
                     uint64_t initrd_size, const std::vector<E820Entry>& e820) {
  uint8_t* zp = mem.ptr(kZeroPage, 4096);
  if (!zp) fail("zero page outside guest memory");
  std::memset(zp, 0, 4096);
  if (e820.size() > kE820Max) fail("too many e820 entries");
  put<uint8_t>(mem, kZeroPage + kE820Entries, static_cast<uint8_t>(e820.size()));
  for (size_t i = 0; i < e820.size(); i++) {
    uint64_t at = kZeroPage + kE820Table + i * 20;
    put<uint64_t>(mem, at, e820[i].addr);
    put<uint64_t>(mem, at + 8, e820[i].size);
    put<uint32_t>(mem, at + 16, e820[i].type);
  }
  put<uint8_t>(mem, kZeroPage + kSetupSects, 0);
  put<uint16_t>(mem, kZeroPage + kBootFlag, 0xaa55);
  put<uint32_t>(mem, kZeroPage + kHeader, 0x53726448);  // "HdrS"
  put<uint16_t>(mem, kZeroPage + kVersion, 0x020f);
  put<uint8_t>(mem, kZeroPage + kTypeOfLoader, 0xff);  // undefined loader
  put<uint8_t>(mem, kZeroPage + kLoadFlags, 0x01);     // LOADED_HIGH
  put<uint32_t>(mem, kZeroPage + kRamdiskImage, static_cast<uint32_t>(initrd_addr));
  put<uint32_t>(mem, kZeroPage + kRamdiskSize, static_cast<uint32_t>(initrd_size));
  put<uint32_t>(mem, kZeroPage + kCmdLinePtr, static_cast<uint32_t>(kCmdline));
  put<uint32_t>(mem, kZeroPage + kCmdlineSize, static_cast<uint32_t>(cmdline_len));
  put<uint32_t>(mem, kZeroPage + kInitrdAddrMax, 0x7fffffff);
  put<uint32_t>(mem, kZeroPage + kKernelAlignment, 0x1000000);
}

void write_page_tables(const memory::GuestMemory& mem) {
  put<uint64_t>(mem, kPml4, kPdpt | 0x3);  // present, writable
  for (uint64_t i = 1; i < 512; i++) put<uint64_t>(mem, kPml4 + i * 8, 0);
  for (uint64_t g = 0; g < 512; g++)
    put<uint64_t>(mem, kPdpt + g * 8, g < 4 ? (kPd + g * 0x1000) | 0x3 : 0);
  for (uint64_t g = 0; g < 4; g++)
    for (uint64_t j = 0; j < 512; j++)
      put<uint64_t>(mem, kPd + g * 0x1000 + j * 8, ((g << 30) | (j << 21)) | 0x83);  // 2 MiB page
}

void write_gdt(const memory::GuestMemory& mem) {
  const uint64_t gdt[] = {0, 0, gdt_entry(kCodeFlags, 0, 0xfffff),
                          gdt_entry(kDataFlags, 0, 0xfffff), gdt_entry(kTssFlags, 0, 0xfffff)};
  if (!mem.write(kGdtAddr, gdt, sizeof gdt)) fail("GDT outside guest memory");
}

void setup_long_mode_sregs(kvm_sregs& s) {
  s.gdt.base = kGdtAddr;
  s.gdt.limit = 5 * 8 - 1;
  s.idt.base = 0;
  s.idt.limit = 0;
  s.cs = segment(kCodeSelector, kCodeFlags, 0xfffff);
  s.ds = s.es = s.fs = s.gs = s.ss = segment(kDataSelector, kDataFlags, 0xfffff);
  s.tr = segment(kTssSelector, kTssFlags, 0xfffff);
  // Limits as the CPU caches them: with G set the byte limit is 4 GiB - 1.
  s.cs.limit = s.ds.limit = s.es.limit = s.fs.limit = s.gs.limit = s.ss.limit = s.tr.limit =
      0xffffffff;
  s.ldt = kvm_segment{};
  s.ldt.type = 2;
  s.ldt.present = 1;
  s.ldt.limit = 0xffff;
  s.cr0 = 0x80000011;  // PG | ET | PE
  s.cr3 = kPml4;
  s.cr4 = 0x20;    // PAE
  s.efer = 0x500;  // LMA | LME
}

kvm_regs boot_regs(uint64_t entry) {
  kvm_regs r{};
  r.rflags = 0x2;
  r.rip = entry;
  r.rsi = kZeroPage;
  r.rsp = kBootStack;
  r.rbp = kBootStack;
  return r;
}

kvm_fpu boot_fpu() {
  kvm_fpu f{};
  f.fcw = 0x37f;
  f.mxcsr = 0x1f80;
  return f;
}

}  // namespace space::vmm::x86
