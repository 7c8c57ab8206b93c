// Vector state kept for a guest kernel that cannot keep it; see vector_state.h.
#include "vmm/arch/x86_64/vector_state.h"

#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace space::vmm::x86 {
namespace {
constexpr uint32_t kXsaveLeaf = 0xd;
constexpr uint32_t kMaxArea = 4096;  // the guest kernel's fpregs_state is one page

const kvm_cpuid_entry2* find_leaf(std::span<const kvm_cpuid_entry2> cpuid, uint32_t function,
                                  uint32_t index) {
  for (const auto& e : cpuid)
    if (e.function == function && e.index == index) return &e;
  return nullptr;
}

uint64_t xstate_bv(std::span<const uint8_t> image) {
  uint64_t bv;
  std::memcpy(&bv, image.data() + kXstateBvOffset, sizeof bv);
  return bv;
}

void set_xstate_bv(std::span<uint8_t> image, uint64_t bv) {
  std::memcpy(image.data() + kXstateBvOffset, &bv, sizeof bv);
}
}  // namespace

VectorLayout vector_layout(std::span<const kvm_cpuid_entry2> cpuid, size_t image_size) {
  VectorLayout l;
  const kvm_cpuid_entry2* top = find_leaf(cpuid, kXsaveLeaf, 0);
  if (!top) return l;
  const uint64_t usable = (uint64_t(top->edx) << 32 | top->eax) & kKeptComponents;
  const size_t limit = std::min<size_t>(image_size, kMaxArea);
  for (uint32_t i = 2; i < 64; i++) {
    if (!(usable >> i & 1)) continue;
    const kvm_cpuid_entry2* e = find_leaf(cpuid, kXsaveLeaf, i);
    if (!e || e->eax == 0 || e->ebx < kMinArea || uint64_t(e->ebx) + e->eax > limit) continue;
    l.components.push_back({i, e->ebx, e->eax});
    l.mask |= uint64_t(1) << i;
    l.area_size = std::max(l.area_size, e->ebx + e->eax);
  }
  return l;
}

void store_components(const VectorLayout& l, std::span<const uint8_t> image,
                      std::span<uint8_t> area) {
  const uint64_t bv = xstate_bv(image) & l.mask;
  for (const auto& c : l.components) {
    uint8_t* dst = area.data() + c.offset;
    if (bv >> c.index & 1)
      std::memcpy(dst, image.data() + c.offset, c.size);
    else
      std::memset(dst, 0, c.size);
  }
  set_xstate_bv(area, (xstate_bv(area) & ~l.mask) | bv);
}

void load_components(const VectorLayout& l, std::span<const uint8_t> area,
                     std::span<uint8_t> image) {
  const uint64_t bv = xstate_bv(area) & l.mask;
  for (const auto& c : l.components) {
    uint8_t* dst = image.data() + c.offset;
    if (bv >> c.index & 1)
      std::memcpy(dst, area.data() + c.offset, c.size);
    else
      std::memset(dst, 0, c.size);
  }
  set_xstate_bv(image, (xstate_bv(image) & ~l.mask) | bv);
}

void VectorStateKeeper::configure(VectorLayout layout, size_t image_size) {
  if (layout.area_size > image_size) layout = {};
  layout_ = std::move(layout);
  image_size_ = image_size;
}

void VectorStateKeeper::read(uint16_t port, std::span<uint8_t> data) const {
  std::fill(data.begin(), data.end(), 0xff);
  if (data.size() != 4) return;
  uint32_t v;
  if (port == kPortSave)
    v = layout_.area_size ? kMagic : 0;
  else if (port == kPortRestore)
    v = layout_.area_size;
  else
    return;
  std::memcpy(data.data(), &v, sizeof v);
}

std::string VectorStateKeeper::write(const VcpuFd& fd, uint16_t port,
                                     std::span<const uint8_t> data) const {
  if (data.size() != 4 || layout_.area_size == 0) return {};
  if (port != kPortSave && port != kPortRestore) return {};
  uint32_t v;
  std::memcpy(&v, data.data(), sizeof v);
  uint8_t* area = mem_.ptr(uint64_t(v) << 6, layout_.area_size);
  if (!area) return {};  // the guest named memory it does not have: nothing to do

  thread_local std::vector<uint8_t> image;
  image.assign(std::max(image_size_, sizeof(kvm_xsave)), 0);
  const bool big = image.size() > sizeof(kvm_xsave);
  if (::ioctl(fd.fd(), big ? KVM_GET_XSAVE2 : KVM_GET_XSAVE, image.data()) != 0)
    return std::string("vector state: KVM_GET_XSAVE failed: ") + std::strerror(errno);
  if (port == kPortSave) {
    store_components(layout_, image, {area, layout_.area_size});
    return {};
  }
  // The area is guest memory another vCPU may be writing: take one copy, then use only it.
  thread_local std::vector<uint8_t> copy;
  copy.assign(area, area + layout_.area_size);
  load_components(layout_, copy, image);
  if (::ioctl(fd.fd(), KVM_SET_XSAVE, image.data()) != 0)
    return std::string("vector state: KVM_SET_XSAVE failed: ") + std::strerror(errno);
  return {};
}

}  // namespace space::vmm::x86
