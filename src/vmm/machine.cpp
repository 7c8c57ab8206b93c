// Machine assembly; see machine.h.
#include "vmm/machine.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>

#include "devices/i8042.h"
#include "devices/serial.h"
#include "devices/virtio/block.h"
#include "devices/virtio/mmio.h"
#include "devices/virtio/rng.h"
#include "devices/virtio/vsock.h"
#include "util/error.h"
#include "util/log.h"
#include "vmm/arch/x86_64/boot.h"
#include "vmm/arch/x86_64/cpuid.h"
#include "vmm/arch/x86_64/mptable.h"
#include "vmm/arch/x86_64/vcpu_state.h"

namespace space::vmm {

namespace {
constexpr uint64_t kVirtioMmioSize = devices::VirtioMmio::kWindowSize;
constexpr uint32_t kFirstVirtioIrq = 5;
constexpr uint64_t kTssAddr = 0xfffbd000;
constexpr uint64_t kIdentityMapAddr = 0xfffbc000;
constexpr uint32_t kLapicLvt0 = 0x350, kLapicLvt1 = 0x360;
constexpr uint32_t kDeliveryExtInt = 7, kDeliveryNmi = 4;

Fd open_file(const std::string& path, int flags, const char* what) {
  Fd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (!fd) throw_errno(std::string("open ") + what + " " + path);
  return fd;
}

void set_lvt(kvm_lapic_state& l, uint32_t reg, uint32_t mode) {
  uint32_t v;
  std::memcpy(&v, l.regs + reg, 4);
  v = (v & ~0x700u) | (mode << 8);
  std::memcpy(l.regs + reg, &v, 4);
}
}  // namespace

// An IRQ line into the in-kernel irqchip through KVM_IRQ_LINE.
class Machine::KvmIrq : public devices::IrqLine {
 public:
  KvmIrq(const Vm& vm, uint32_t gsi) : vm_(vm), gsi_(gsi) {}
  void set_level(bool level) override {
    try {
      vm_.irq_line(gsi_, level);
    } catch (const Error& e) {
      log::error(std::string("irq ") + std::to_string(gsi_) + ": " + e.what());
    }
  }

 private:
  const Vm& vm_;
  uint32_t gsi_;
};

Machine::Machine(const MachineSpec& spec, EventLoop& loop, std::function<void()> on_exit)
    : Machine(spec, memory::GuestMemory::anonymous(spec.memory_bytes), loop, std::move(on_exit)) {}

Machine::Machine(const MachineSpec& spec, memory::GuestMemory memory, EventLoop& loop,
                 std::function<void()> on_exit)
    : Machine(spec, MachineFiles{}, std::move(memory), loop, std::move(on_exit)) {}

Machine::Machine(const MachineSpec& spec, MachineFiles files, memory::GuestMemory memory,
                 EventLoop& loop, std::function<void()> on_exit)
    : spec_(spec),
      kernel_fd_(std::move(files.kernel)),
      loop_(loop),
      on_exit_(std::move(on_exit)),
      kvm_(files.kvm ? Kvm(std::move(files.kvm)) : Kvm()),
      mem_(std::move(memory)),
      vm_(kvm_) {
  spec_.memory_bytes = mem_.size();
  int max_vcpus = std::max(1, vm_.check_extension(KVM_CAP_NR_VCPUS));
  if (spec.vcpus < 1 ||
      spec.vcpus > static_cast<uint32_t>(std::min(max_vcpus, x86::kMaxVcpusMpTable)))
    fail("this host supports 1 to " + std::to_string(max_vcpus) + " vCPUs, not " +
             std::to_string(spec.vcpus),
         "pass --cpus " + std::to_string(max_vcpus) + " or fewer");
  // Memory before the irqchip: much faster (see kvm-host-notes.md).
  mark("kvm vm");
  vm_.set_memory(0, mem_.host_base(), mem_.size());
  mark("memslot");
  vm_.set_tss_addr(kTssAddr);
  vm_.set_identity_map_addr(kIdentityMapAddr);
  mark("tss");
  vm_.create_irqchip();
  mark("irqchip");
  vm_.create_pit();
  mark("pit");

  irqs_.push_back(std::make_unique<KvmIrq>(vm_, devices::Serial::kCom1Irq));
  auto serial = std::make_unique<devices::Serial>(*irqs_.back(), spec.console_fd);
  pio_.add(devices::Serial::kCom1Base, 8, serial.get());
  devices_.push_back(std::move(serial));
  auto i8042 = std::make_unique<devices::I8042>([this] {
    record_exit({VmExit::Kind::Reset, "the guest reset the machine (i8042)"});
  });
  pio_.add(devices::I8042::kDataPort, 5, i8042.get());
  devices_.push_back(std::move(i8042));

  // virtio-mmio devices, announced to the guest on the command line: vda is the rootfs, vdb the
  // image slot.
  devices::VirtioBlock::Options blk_opts;
  blk_opts.serial = "space-root";
  auto blk = std::make_unique<devices::VirtioBlock>(
      files.rootfs ? std::move(files.rootfs) : open_file(spec.rootfs, O_RDWR, "rootfs"), blk_opts);
  devices::VirtioBlock* blk_ptr = blk.get();
  disks_.emplace_back(add_virtio("virtio-blk0", std::move(blk)), blk_ptr);
  auto vsock = files.vsock_listener ? std::make_unique<devices::VirtioVsock>(
                                          loop_, spec.guest_cid, std::move(files.vsock_listener),
                                          spec.vsock_uds, spec.vsock_routes)
                                    : std::make_unique<devices::VirtioVsock>(
                                          loop_, spec.guest_cid, spec.vsock_uds, spec.vsock_routes);
  vsock_ = vsock.get();
  vsock_dev_ = add_virtio("virtio-vsock", std::move(vsock));
  add_virtio("virtio-rng", std::make_unique<devices::VirtioRng>());
  // Last, so that the devices before it keep their windows and IRQs.
  devices::VirtioBlock::Options image_opts;
  image_opts.serial = "space-image";
  Fd image_fd = files.image               ? std::move(files.image)
                : spec.image_disk.empty() ? Fd()
                                          : open_file(spec.image_disk, O_RDWR, "image disk");
  auto image = std::make_unique<devices::VirtioBlock>(std::move(image_fd), image_opts);
  devices::VirtioBlock* image_ptr = image.get();
  disks_.emplace_back(add_virtio("virtio-blk1", std::move(image)), image_ptr);
  mark("devices");

  for (uint32_t i = 0; i < spec.vcpus; i++) {
    vcpus_.push_back(std::make_unique<Vcpu>(vm_.create_vcpu(kvm_, static_cast<int>(i)), pio_, mmio_,
                                            [this](const VmExit& e) { record_exit(e); }));
    vcpus_.back()->set_thread_setup(spec.vcpu_thread_setup);
  }
  vcpu_cpuid_.resize(vcpus_.size());
  if (spec.host == HostKind::Pvm) {
    vector_ = std::make_unique<x86::VectorStateKeeper>(mem_);
    for (auto& v : vcpus_) v->set_vector_keeper(vector_.get());
  }
  mark("vcpus");
}

void Machine::mark(const char* phase) const {
  if (spec_.phases) spec_.phases->mark(phase);
}

Machine::~Machine() {
  stop();
}

devices::VirtioMmio* Machine::add_virtio(const std::string& name,
                                         std::unique_ptr<devices::VirtioBackend> backend) {
  const uint32_t irq = kFirstVirtioIrq + static_cast<uint32_t>(virtio_cmdline_.size());
  const uint64_t base = memory::GuestMemory::kMmioBase + virtio_cmdline_.size() * kVirtioMmioSize;
  irqs_.push_back(std::make_unique<KvmIrq>(vm_, irq));
  auto dev = std::make_unique<devices::VirtioMmio>(name, mem_, *irqs_.back(), std::move(backend));
  mmio_.add(base, kVirtioMmioSize, dev.get());
  char arg[96];
  std::snprintf(arg, sizeof arg, "virtio_mmio.device=4K@0x%llx:%u",
                static_cast<unsigned long long>(base), irq);
  virtio_cmdline_.push_back(arg);
  devices::VirtioMmio* raw = dev.get();
  devices_.push_back(std::move(dev));
  return raw;
}

std::string Machine::build_cmdline() const {
  // kvm-clock, not the TSC the guest kernel would pick on a host with an invariant one: a restore
  // sets kvm-clock back to its snapshot value, but not the TSC (PVM cannot offset it), and a
  // guest on the TSC found its clocks leapt by the time its template sat on disk and spent
  // seconds of interpreted kernel time catching up after every restore.
  std::string c =
      "console=ttyS0 reboot=k panic=-1 root=/dev/vda rw rootfstype=ext4 io_delay=none quiet "
      "tsc=reliable clocksource=kvm-clock";
  // Freed guest pages and slab objects are zeroed: no secret outlives its use. The guest's RAM is
  // fresh zeroed memory (an anonymous mapping or a new sparse file), so boot_memory_zeroed
  // (scripts/kernel/patches/0006) skips zeroing it all once more at boot; every page freed after
  // boot is still zeroed.
  c += " init_on_free=1 boot_memory_zeroed";
  c += " space.id=" + spec_.id;
  for (auto& v : virtio_cmdline_) c += " " + v;
  if (spec_.host == HostKind::Pvm) c += " " + pvm_boot_params();
  if (!spec_.cmdline_extra.empty()) c += " " + spec_.cmdline_extra;
  return c;
}

void Machine::setup_vcpu(Vcpu& v, uint64_t entry, const std::vector<kvm_cpuid_entry2>& supported) {
  const VcpuFd& fd = v.fd();
  auto entries = x86::filter_cpuid(
      supported, {fd.index(), static_cast<int>(spec_.vcpus), spec_.host == HostKind::Pvm});
  x86::set_cpuid(fd, entries);
  vcpu_cpuid_[static_cast<size_t>(fd.index())] = std::move(entries);

  kvm_lapic_state lapic{};
  fd.ioctl_or_throw(KVM_GET_LAPIC, &lapic, "KVM_GET_LAPIC");
  set_lvt(lapic, kLapicLvt0, kDeliveryExtInt);
  set_lvt(lapic, kLapicLvt1, kDeliveryNmi);
  fd.ioctl_or_throw(KVM_SET_LAPIC, &lapic, "KVM_SET_LAPIC");

  if (fd.index() != 0) return;  // application processors wait for INIT/SIPI
  kvm_sregs sregs{};
  fd.ioctl_or_throw(KVM_GET_SREGS, &sregs, "KVM_GET_SREGS");
  x86::setup_long_mode_sregs(sregs);
  fd.ioctl_or_throw(KVM_SET_SREGS, &sregs, "KVM_SET_SREGS");
  kvm_regs regs = x86::boot_regs(entry);
  fd.ioctl_or_throw(KVM_SET_REGS, &regs, "KVM_SET_REGS");
  kvm_fpu fpu = x86::boot_fpu();
  fd.ioctl_or_throw(KVM_SET_FPU, &fpu, "KVM_SET_FPU");
}

void Machine::boot() {
  Fd kfd = kernel_fd_ ? std::move(kernel_fd_) : open_file(spec_.kernel, O_RDONLY, "kernel");
  x86::KernelImage img = x86::load_elf_kernel(mem_, kfd.get(), spec_.kernel);
  uint64_t initrd_addr = 0, initrd_size = 0;
  if (!spec_.initrd.empty()) {
    Fd ifd = open_file(spec_.initrd, O_RDONLY, "initrd");
    struct stat st;
    if (::fstat(ifd.get(), &st) != 0) throw_errno("stat initrd " + spec_.initrd);
    initrd_size = static_cast<uint64_t>(st.st_size);
    initrd_addr = x86::load_initrd(mem_, ifd.get(), initrd_size, img.load_end);
  }
  cmdline_ = build_cmdline();
  x86::write_cmdline(mem_, cmdline_);
  x86::write_zero_page(mem_, cmdline_.size() + 1, initrd_addr, initrd_size,
                       x86::e820_map(mem_.size()));
  x86::write_page_tables(mem_);
  x86::write_gdt(mem_);
  x86::write_mptable(mem_, static_cast<int>(spec_.vcpus));
  auto supported = kvm_.supported_cpuid();
  for (auto& v : vcpus_) setup_vcpu(*v, img.entry, supported);
}

void Machine::start() {
  if (vector_ && !vcpu_cpuid_.empty() && !vcpu_cpuid_[0].empty()) {
    const size_t image = x86::vcpu_state_caps(vm_).xsave_size;
    vector_->configure(x86::vector_layout(vcpu_cpuid_[0], image), image);
  }
  for (auto& v : vcpus_) v->start();
}

Machine::Stats Machine::stats() const {
  Stats st;
  kvm_clock_data clock{};
  if (::ioctl(vm_.fd(), KVM_GET_CLOCK, &clock) == 0) st.guest_clock_ns = clock.clock;
  if (vsock_) {
    st.host_connections = vsock_->host_connections();
    st.guest_connections = vsock_->guest_connections();
    st.open_connections = vsock_->connection_count();
  }
  return st;
}

void Machine::stop() {
  for (auto& v : vcpus_) v->request_stop();
  for (auto& v : vcpus_) v->join();
}

void Machine::record_exit(const VmExit& e) {
  {
    std::lock_guard lock(exit_mu_);
    if (exit_) return;
    exit_ = e;
  }
  for (auto& v : vcpus_) v->request_stop();
  if (on_exit_) on_exit_();
}

std::optional<VmExit> Machine::exit_reason() const {
  std::lock_guard lock(exit_mu_);
  return exit_;
}

}  // namespace space::vmm
