// The snapshot state file `vmstate`: everything needed to resume a VM except its RAM (which is
// the separate sparse file `memory`, see snapshot_memory.h). Layout, little-endian:
//   header  "SPACESNP" | u32 format version | u32 flags (0) | u64 payload length | u32 CRC-32
//   payload u32 section count, then per section: str name, bytes body (proto::Writer encoding)
// Sections, exactly these, each parsed to its last byte:
//   "machine"      u32 vcpus, u64 memory bytes, str kernel cmdline, strs device names
//   "cpu"          CPUID 1.ecx, 1.edx, 7.ebx, 7.ecx, 7.edx the guest saw (host requirements)
//   "vcpu/<i>"     one per vCPU (vcpu_state.h)
//   "vm"           irqchip, PIT, kvmclock (vm_state.h)
//   "device/<n>"   Device::save() of each device named in "machine", keyed by Device::name()
// Reading validates everything and throws space::Error "snapshot <path>: <what>" with a hint to
// rebuild the template; it never trusts a length or count it has not checked.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "proto/fields.h"
#include "util/fs.h"
#include "vmm/arch/x86_64/cpu_features.h"
#include "vmm/arch/x86_64/vcpu_state.h"
#include "vmm/arch/x86_64/vm_state.h"

namespace space::vmm::snapshot {

inline constexpr char kMagic[8] = {'S', 'P', 'A', 'C', 'E', 'S', 'N', 'P'};
// 2: every machine has the image slot (virtio-blk1) and its guest speaks agent protocol 3, so
// templates saved by format 1 are reported as needing a rebuild instead of failing to restore.
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr size_t kHeaderSize = 28;
inline constexpr const char* kVmstateFile = "vmstate";
inline constexpr const char* kMemoryFile = "memory";

struct MachineInfo {
  static constexpr uint32_t kMaxVcpus = 256;
  static constexpr uint32_t kMaxDevices = 64;
  static constexpr size_t kMaxCmdline = 64 * 1024;
  static constexpr size_t kMaxName = 128;  // a device's name, and a section's
  uint32_t vcpus = 1;
  uint64_t memory_bytes = 0;
  std::string cmdline;
  std::vector<std::string> devices;  // Device::name() in the order the VMM builds them
  // proto/fields.h: the "machine" section
  SPACE_FIELDS(vcpus, memory_bytes, (cmdline, proto::Max{kMaxCmdline}),
               (devices, proto::Max{kMaxDevices}));
  void check() const;  // ranges, and device names: not empty, short, each once
};

struct DeviceState {
  std::string name;
  std::vector<uint8_t> data;
};

struct Snapshot {
  MachineInfo machine;
  x86::CpuFeatures cpu;
  std::vector<x86::VcpuState> vcpus;  // machine.vcpus of them
  x86::VmState vm;
  std::vector<DeviceState> devices;  // one per machine.devices entry, same order
};

// The whole vmstate file image (header + payload).
std::vector<uint8_t> encode(const Snapshot& s);
// Parses and validates a vmstate image; `origin` (its path) prefixes every error.
Snapshot decode(std::span<const uint8_t> image, const std::string& origin);
// Writes `s` to `path` atomically (temp file, fsync, rename, fsync of the directory); returns
// the bytes written.
size_t write_vmstate(const std::string& path, const Snapshot& s);
// The same through a directory descriptor (a jailed VMM's snapshot directory).
size_t write_vmstate(const fs::FileAt& to, const Snapshot& s);
// The bytes of vmstate file `path`, not yet decoded: a regular file, never through a symlink,
// at most 64 MiB (a jailed VMM reads them before it enters its jail and decodes them after).
std::vector<uint8_t> read_vmstate_bytes(const std::string& path);
// Reads and decodes `path`.
Snapshot read_vmstate(const std::string& path);
// The hint attached to every snapshot validation error.
const char* rebuild_hint();

}  // namespace space::vmm::snapshot
