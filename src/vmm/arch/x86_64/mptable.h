// The Intel MultiProcessor (MP 1.4) table that tells Linux, without ACPI, how many CPUs there
// are, where the I/O APIC is and how ISA IRQs 0-15 reach it. It is written at kMpTable, a spot
// Linux scans (the top KiB of base memory), which the e820 map reserves.
#pragma once
#include <cstdint>

#include "memory/guest_memory.h"

namespace space::vmm::x86 {

constexpr uint64_t kIoApicAddr = 0xfec00000;
constexpr uint64_t kLapicAddr = 0xfee00000;
constexpr int kMaxVcpusMpTable = 64;

// Writes the floating pointer and configuration table for `vcpus` processors (APIC ids 0..n-1)
// and one I/O APIC (id = vcpus) with IRQs 0-15 mapped 1:1. Returns the bytes written.
size_t write_mptable(const memory::GuestMemory& mem, int vcpus);

// Sum of `len` bytes mod 256 (a valid MP structure sums to 0).
uint8_t mp_checksum(const uint8_t* p, size_t len);

}  // namespace space::vmm::x86
