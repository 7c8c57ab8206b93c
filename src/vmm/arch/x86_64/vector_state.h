// VectorStateKeeper: keeps each guest task's extended vector state (AVX, AVX-512) for a guest
// kernel that cannot. On PVM hosts the guest kernel boots with noxsave (PVM cannot emulate
// XSAVE/XRSTOR in guest ring 0) and switches tasks with FXSAVE/FXRSTOR, x87 and SSE only, while
// the host's XCR0 stays in force: user space can execute AVX, and without help its upper
// register state leaks from task to task. Our guest kernel (scripts/kernel/patches/0005, under
// pvm_quirks) asks this keeper instead, through two I/O ports:
//   in  kPortSave    -> kMagic when the keeper has components to keep (else 0)
//   in  kPortRestore -> bytes a task's area needs (standard XSAVE layout: legacy area, header,
//                       components at their CPUID offsets)
//   out kPortSave,    pa >> 6: copy the vCPU's kept components and their XSTATE_BV bits to pa
//   out kPortRestore, pa >> 6: load them from pa (components whose bit is clear: init state)
// pa is a guest-physical address the guest chose; it is bounds-checked against guest RAM, and a
// bad one is ignored (only the guest's own tasks can suffer from it). The keeper has no state of
// its own: the areas live in guest RAM and the live registers in KVM's vCPU state, so snapshots,
// restores and branches carry both. The legacy area is never touched: FXSAVE/FXRSTOR own it.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memory/guest_memory.h"
#include "vmm/kvm.h"
#include "vmm/kvm_api.h"

namespace space::vmm::x86 {

// One XSAVE component in the standard (non-compacted) layout KVM_GET_XSAVE uses.
struct XstateComponent {
  uint32_t index = 0;   // XCR0 bit
  uint32_t offset = 0;  // bytes from the start of the image
  uint32_t size = 0;
};

struct VectorLayout {
  std::vector<XstateComponent> components;  // ascending index
  uint64_t mask = 0;                        // XSTATE_BV bits of `components`
  uint32_t area_size = 0;                   // bytes a task's area needs; 0 when nothing to keep
};

// XSAVE components the keeper takes care of: AVX (2), AVX-512 opmask (5), ZMM_Hi256 (6) and
// Hi16_ZMM (7). Not MPX (3, 4: gone from Linux hosts), PKRU (9: not vector state) or AMX (17, 18:
// needs a per-process permission the guest cannot get, and 8 KiB per task).
inline constexpr uint64_t kKeptComponents = (1u << 2) | (1u << 5) | (1u << 6) | (1u << 7);
// Byte offset of XSTATE_BV in an XSAVE image.
inline constexpr uint32_t kXstateBvOffset = 512;
// Smallest area: legacy region plus XSAVE header.
inline constexpr uint32_t kMinArea = 576;

// The layout for a vCPU with `cpuid` (what KVM_SET_CPUID2 got: leaf 0xD subleaf 0 lists the
// components the guest may use, subleaf i gives component i's size and offset), limited to
// kKeptComponents and to components that fit in `image_size` bytes and in one 4 KiB area.
// Components the CPUID describes inconsistently are left out.
VectorLayout vector_layout(std::span<const kvm_cpuid_entry2> cpuid, size_t image_size);

// Copies the kept components of `image` (a KVM_GET_XSAVE image) and their XSTATE_BV bits into
// `area` (layout.area_size bytes); components not in use are zeroed in the area.
void store_components(const VectorLayout& layout, std::span<const uint8_t> image,
                      std::span<uint8_t> area);
// The inverse: writes the kept components of `area` into `image` and sets their XSTATE_BV bits
// as the area says; a component whose bit is clear goes to its init state (zero, bit clear).
// Bits outside layout.mask in the area are ignored.
void load_components(const VectorLayout& layout, std::span<const uint8_t> area,
                     std::span<uint8_t> image);

class VectorStateKeeper {
 public:
  static constexpr uint16_t kPortSave = 0x5f0;
  static constexpr uint16_t kPortRestore = 0x5f4;
  static constexpr uint16_t kPortCount = 8;
  static constexpr uint32_t kMagic = 0x58565053;  // "SPVX"

  explicit VectorStateKeeper(const memory::GuestMemory& mem) : mem_(mem) {}

  // Sets what to keep; call before any vCPU runs. `image_size` is the KVM_GET_XSAVE(2) size.
  void configure(VectorLayout layout, size_t image_size);
  const VectorLayout& layout() const { return layout_; }

  static bool claims(uint16_t port) { return port >= kPortSave && port < kPortSave + kPortCount; }
  // A guest port read (only 4-byte reads at the two ports answer; others read as all-ones).
  void read(uint16_t port, std::span<uint8_t> data) const;
  // A guest port write from the vCPU `fd` (its thread, during the exit). Returns an error
  // message when KVM refused the state (the VM cannot go on correctly), else an empty string.
  std::string write(const VcpuFd& fd, uint16_t port, std::span<const uint8_t> data) const;

 private:
  const memory::GuestMemory& mem_;
  VectorLayout layout_;
  size_t image_size_ = 0;
};

}  // namespace space::vmm::x86
