// Thin RAII wrappers over the KVM ioctl API: Kvm (/dev/kvm: versions, capabilities, supported
// CPUID, MSR list), Vm (a VM fd: memory slots, irqchip, PIT, IRQ lines, vCPU creation, VM-wide
// state) and VcpuFd (a vCPU fd with its mmapped kvm_run). Every failing ioctl throws space::Error
// naming the ioctl. Nothing here knows about boot layout or devices.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "util/fd.h"
#include "util/mmap.h"
#include "vmm/kvm_api.h"

namespace space::vmm {

// Opens the KVM device (read-write, close-on-exec), or throws an Error whose hint names the fix
// for a host without KVM (ENOENT; where `sys_module_dir` shows kvm_pvm loaded, that it made no
// device, as on a kernel that is itself a PVM guest) or a caller without access (EACCES).
Fd open_kvm_device(const std::string& path = "/dev/kvm",
                   const std::string& sys_module_dir = "/sys/module");

class Kvm {
 public:
  // Opens /dev/kvm (path overridable for tests); checks the API version is 12.
  explicit Kvm(const std::string& path = "/dev/kvm");
  // The same over an open /dev/kvm (a jailed VMM has no /dev).
  explicit Kvm(Fd fd);
  int fd() const { return fd_.get(); }
  // KVM_CHECK_EXTENSION on /dev/kvm; 0 when unsupported.
  int check_extension(int cap) const;
  // KVM_GET_SUPPORTED_CPUID: the host's CPUID as KVM can present it.
  std::vector<kvm_cpuid_entry2> supported_cpuid() const;
  // KVM_GET_MSR_INDEX_LIST: MSRs that KVM saves and restores.
  std::vector<uint32_t> msr_index_list() const;
  size_t vcpu_mmap_size() const { return vcpu_mmap_size_; }

 private:
  void check();  // API version and vCPU mapping size
  Fd fd_;
  size_t vcpu_mmap_size_ = 0;
};

class VcpuFd {
 public:
  VcpuFd(Fd fd, Mapping run, int index) : fd_(std::move(fd)), run_(std::move(run)), index_(index) {}
  int fd() const { return fd_.get(); }
  int index() const { return index_; }
  kvm_run* run() const { return reinterpret_cast<kvm_run*>(run_.data()); }
  // ioctl() that throws Error("<what>: strerror") on failure.
  void ioctl_or_throw(unsigned long req, void* arg, const char* what) const;

 private:
  Fd fd_;
  Mapping run_;
  int index_;
};

class Vm {
 public:
  explicit Vm(const Kvm& kvm);  // KVM_CREATE_VM
  int fd() const { return fd_.get(); }
  // KVM_CHECK_EXTENSION on the VM fd (per-VM values, e.g. KVM_CAP_NR_VCPUS).
  int check_extension(int cap) const;
  // Registers guest RAM at guest-physical 0 as slot 0. Call before create_irqchip() (faster).
  void set_memory(uint64_t gpa, uint8_t* host, uint64_t size, uint32_t slot = 0);
  // TSS and identity-map pages (needed by VMX; harmless elsewhere).
  void set_tss_addr(uint64_t addr);
  void set_identity_map_addr(uint64_t addr);
  void create_irqchip();  // in-kernel PIC, IOAPIC, LAPICs
  void create_pit();      // in-kernel i8254 PIT (KVM_CREATE_PIT2)
  // Drives GSI `irq` to `level` (KVM_IRQ_LINE).
  void irq_line(uint32_t irq, bool level) const;
  // Creates vCPU `index` and maps its kvm_run.
  VcpuFd create_vcpu(const Kvm& kvm, int index);
  void ioctl_or_throw(unsigned long req, void* arg, const char* what) const;

 private:
  Fd fd_;
};

}  // namespace space::vmm
