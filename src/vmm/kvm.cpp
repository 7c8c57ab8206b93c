// KVM ioctl wrappers; see kvm.h.
#include "vmm/kvm.h"

#include <fcntl.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "util/error.h"
#include "vmm/host.h"

namespace space::vmm {

Fd open_kvm_device(const std::string& path, const std::string& sys_module_dir) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (fd) return fd;
  int e = errno;
  Error err("open " + path + ": " + std::strerror(e), e);
  if (e == ENOENT && detect_host(sys_module_dir) == HostKind::Pvm)
    err.set_hint(
        "kvm_pvm is loaded but made no KVM device, as on a kernel that is itself a PVM guest: "
        "PVM does not nest, and 'dmesg | grep kvm-pvm' says why. Run space on the PVM host "
        "itself, or on a host with hardware virtualisation");
  else if (e == ENOENT)
    err.set_hint("this host has no KVM; load kvm_intel/kvm_amd or use a host with virtualisation");
  if (e == EACCES) err.set_hint("run as root or add your user to the 'kvm' group");
  throw err;
}

Kvm::Kvm(const std::string& path) : fd_(open_kvm_device(path)) {
  check();
}

Kvm::Kvm(Fd fd) : fd_(std::move(fd)) {
  if (!fd_) fail("no /dev/kvm descriptor");
  check();
}

void Kvm::check() {
  int v = ::ioctl(fd_.get(), KVM_GET_API_VERSION, 0);
  if (v != KVM_API_VERSION) fail("unsupported KVM API version " + std::to_string(v));
  int sz = ::ioctl(fd_.get(), KVM_GET_VCPU_MMAP_SIZE, 0);
  if (sz <= 0) throw_errno("KVM_GET_VCPU_MMAP_SIZE");
  vcpu_mmap_size_ = static_cast<size_t>(sz);
}

int Kvm::check_extension(int cap) const {
  int r = ::ioctl(fd_.get(), KVM_CHECK_EXTENSION, cap);
  return r < 0 ? 0 : r;
}

std::vector<kvm_cpuid_entry2> Kvm::supported_cpuid() const {
  // Start big enough for common hosts (~80 entries): an E2BIG retry redoes all of KVM's work.
  for (uint32_t n = 256; n <= 4096; n *= 2) {
    size_t bytes = sizeof(kvm_cpuid2) + n * sizeof(kvm_cpuid_entry2);
    std::unique_ptr<uint8_t[]> buf(new uint8_t[bytes]());
    auto* c = reinterpret_cast<kvm_cpuid2*>(buf.get());
    c->nent = n;
    if (::ioctl(fd_.get(), KVM_GET_SUPPORTED_CPUID, c) == 0)
      return std::vector<kvm_cpuid_entry2>(c->entries, c->entries + c->nent);
    if (errno != E2BIG) throw_errno("KVM_GET_SUPPORTED_CPUID");
  }
  fail("KVM_GET_SUPPORTED_CPUID: too many entries");
}

std::vector<uint32_t> Kvm::msr_index_list() const {
  kvm_msr_list probe{};
  probe.nmsrs = 0;
  if (::ioctl(fd_.get(), KVM_GET_MSR_INDEX_LIST, &probe) < 0 && errno != E2BIG)
    throw_errno("KVM_GET_MSR_INDEX_LIST");
  size_t bytes = sizeof(kvm_msr_list) + probe.nmsrs * sizeof(uint32_t);
  std::unique_ptr<uint8_t[]> buf(new uint8_t[bytes]());
  auto* l = reinterpret_cast<kvm_msr_list*>(buf.get());
  l->nmsrs = probe.nmsrs;
  if (::ioctl(fd_.get(), KVM_GET_MSR_INDEX_LIST, l) < 0) throw_errno("KVM_GET_MSR_INDEX_LIST");
  return std::vector<uint32_t>(l->indices, l->indices + l->nmsrs);
}

void VcpuFd::ioctl_or_throw(unsigned long req, void* arg, const char* what) const {
  if (::ioctl(fd_.get(), req, arg) < 0)
    throw_errno(std::string(what) + " (vcpu " + std::to_string(index_) + ")");
}

Vm::Vm(const Kvm& kvm) {
  int fd;
  do {
    fd = ::ioctl(kvm.fd(), KVM_CREATE_VM, 0);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw_errno("KVM_CREATE_VM");
  fd_.reset(fd);
}

int Vm::check_extension(int cap) const {
  int r = ::ioctl(fd_.get(), KVM_CHECK_EXTENSION, cap);
  return r < 0 ? 0 : r;
}

void Vm::ioctl_or_throw(unsigned long req, void* arg, const char* what) const {
  if (::ioctl(fd_.get(), req, arg) < 0) throw_errno(what);
}

void Vm::set_memory(uint64_t gpa, uint8_t* host, uint64_t size, uint32_t slot) {
  kvm_userspace_memory_region r{};
  r.slot = slot;
  r.guest_phys_addr = gpa;
  r.memory_size = size;
  r.userspace_addr = reinterpret_cast<uint64_t>(host);
  ioctl_or_throw(KVM_SET_USER_MEMORY_REGION, &r, "KVM_SET_USER_MEMORY_REGION");
}

void Vm::set_tss_addr(uint64_t addr) {
  if (::ioctl(fd_.get(), KVM_SET_TSS_ADDR, addr) < 0) throw_errno("KVM_SET_TSS_ADDR");
}

void Vm::set_identity_map_addr(uint64_t addr) {
  ioctl_or_throw(KVM_SET_IDENTITY_MAP_ADDR, &addr, "KVM_SET_IDENTITY_MAP_ADDR");
}

void Vm::create_irqchip() {
  ioctl_or_throw(KVM_CREATE_IRQCHIP, nullptr, "KVM_CREATE_IRQCHIP");
}

void Vm::create_pit() {
  kvm_pit_config c{};
  ioctl_or_throw(KVM_CREATE_PIT2, &c, "KVM_CREATE_PIT2");
}

void Vm::irq_line(uint32_t irq, bool level) const {
  kvm_irq_level l{};
  l.irq = irq;
  l.level = level ? 1 : 0;
  if (::ioctl(fd_.get(), KVM_IRQ_LINE, &l) < 0) throw_errno("KVM_IRQ_LINE");
}

VcpuFd Vm::create_vcpu(const Kvm& kvm, int index) {
  int fd = ::ioctl(fd_.get(), KVM_CREATE_VCPU, index);
  if (fd < 0) throw_errno("KVM_CREATE_VCPU " + std::to_string(index));
  Fd vfd(fd);
  Mapping run = Mapping::map(kvm.vcpu_mmap_size(), PROT_READ | PROT_WRITE, MAP_SHARED, vfd.get(), 0,
                             "kvm_run");
  // A branch (fork) must not inherit it: the child builds its own VM, and an inherited kvm_run
  // mapping would keep this VM alive for as long as the child lives.
  if (::madvise(run.data(), run.size(), MADV_DONTFORK) != 0) throw_errno("madvise kvm_run");
  return VcpuFd(std::move(vfd), std::move(run), index);
}

}  // namespace space::vmm
