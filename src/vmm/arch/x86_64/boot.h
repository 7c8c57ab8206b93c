// Direct 64-bit boot of an ELF vmlinux (the Linux x86 64-bit boot protocol, no firmware):
// the low-memory layout below, the kernel's PT_LOAD segments copied to their physical addresses,
// a zero page (boot_params) with an e820 map, the command line and an optional initrd, identity
// page tables for the first 4 GiB with 2 MiB pages, a flat GDT, and the long-mode register state
// the kernel's startup_64 expects (RSI = zero page). Everything is written through GuestMemory,
// so a hostile or truncated kernel image cannot write outside guest RAM.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "memory/guest_memory.h"
#include "vmm/kvm_api.h"

namespace space::vmm::x86 {

// Guest-physical layout of the boot structures.
constexpr uint64_t kGdtAddr = 0x500;
constexpr uint64_t kZeroPage = 0x7000;
constexpr uint64_t kBootStack = 0x8ff0;
constexpr uint64_t kPml4 = 0x9000;
constexpr uint64_t kPdpt = 0xa000;
constexpr uint64_t kPd = 0xb000;  // four page directories: 0xb000..0xefff
constexpr uint64_t kCmdline = 0x20000;
constexpr size_t kCmdlineMax = 2048;     // including the NUL; Linux's COMMAND_LINE_SIZE
constexpr uint64_t kMpTable = 0x9fc00;   // top 1 KiB of base memory, where Linux scans
constexpr uint64_t kHighMem = 0x100000;  // 1 MiB
constexpr uint64_t kMinMemory = 32ULL << 20;

constexpr uint16_t kCodeSelector = 0x10;
constexpr uint16_t kDataSelector = 0x18;
constexpr uint16_t kTssSelector = 0x20;

struct KernelImage {
  uint64_t entry = 0;     // physical entry point (startup_64)
  uint64_t load_end = 0;  // first byte above the loaded image
};

struct E820Entry {
  uint64_t addr;
  uint64_t size;
  uint32_t type;  // 1 = RAM, 2 = reserved
};

// Loads an ELF64 x86_64 vmlinux from `fd`; throws Error on a malformed image or one that does
// not fit in guest RAM.
KernelImage load_elf_kernel(const memory::GuestMemory& mem, int fd, const std::string& path);
// Loads an initrd from `fd` at the highest 4 KiB-aligned address that fits below `limit`
// and above `kernel_end`; returns its guest address. Throws if it does not fit.
uint64_t load_initrd(const memory::GuestMemory& mem, int fd, uint64_t size, uint64_t kernel_end);
// The e820 map for `mem_size` bytes of RAM: base memory, a reserved hole for the MP table and
// legacy ROM area, and RAM from 1 MiB up.
std::vector<E820Entry> e820_map(uint64_t mem_size);
// Writes the NUL-terminated command line at kCmdline; throws if it is too long.
void write_cmdline(const memory::GuestMemory& mem, const std::string& cmdline);
// Writes the zero page at kZeroPage.
void write_zero_page(const memory::GuestMemory& mem, size_t cmdline_len, uint64_t initrd_addr,
                     uint64_t initrd_size, const std::vector<E820Entry>& e820);
// Identity-maps the first 4 GiB with 2 MiB pages (PML4 at kPml4).
void write_page_tables(const memory::GuestMemory& mem);
// Writes the flat GDT (null, null, code64, data, TSS) at kGdtAddr.
void write_gdt(const memory::GuestMemory& mem);
// Puts `sregs` (as read from KVM) into 64-bit long mode over the tables above.
void setup_long_mode_sregs(kvm_sregs& sregs);
// General registers for entry at `entry` with RSI = zero page.
kvm_regs boot_regs(uint64_t entry);
// FPU state after reset (FCW 0x37f, MXCSR 0x1f80).
kvm_fpu boot_fpu();

}  // namespace space::vmm::x86
