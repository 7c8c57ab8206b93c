// Split virtqueue over guest memory: ring validation, chain walking with every bound checked, and
// the used-ring publication. Layouts (virtio 1.x): descriptor table of 16-byte entries, avail ring
// {flags, idx, ring[size], used_event}, used ring {flags, idx, ring[size] of {id, len},
// avail_event}.
#include "devices/virtio/queue.h"

#include <atomic>
#include <bit>
#include <cstring>

namespace space::devices {
namespace {

static_assert(std::endian::native == std::endian::little, "virtio rings are little-endian");

constexpr uint16_t kDescFNext = 1;
constexpr uint16_t kDescFWrite = 2;
constexpr uint16_t kDescFIndirect = 4;
constexpr uint16_t kAvailFNoInterrupt = 1;

struct RawDesc {
  uint64_t addr;
  uint32_t len;
  uint16_t flags;
  uint16_t next;
};
static_assert(sizeof(RawDesc) == 16);

uint64_t desc_bytes(uint16_t size) {
  return 16ULL * size;
}
uint64_t avail_bytes(uint16_t size) {
  return 6ULL + 2ULL * size;
}
uint64_t used_bytes(uint16_t size) {
  return 6ULL + 8ULL * size;
}

}  // namespace

Virtqueue::Virtqueue(const memory::GuestMemory& mem, uint16_t max_size)
    : mem_(mem), max_size_(max_size) {
  if (max_size_ == 0 || max_size_ > kMaxSize || !std::has_single_bit(max_size_)) max_size_ = 256;
  reset();
}

void Virtqueue::reset() {
  st_ = VirtqueueState{};
  st_.size = max_size_;
}

bool Virtqueue::check_config(const VirtqueueState& s, std::string& why) const {
  if (s.size == 0 || s.size > max_size_ || !std::has_single_bit(s.size)) {
    why = "queue size " + std::to_string(s.size) +
          " is not a power of two <= " + std::to_string(max_size_);
    return false;
  }
  if (s.desc % 16 || s.avail % 2 || s.used % 4) {
    why = "misaligned ring address";
    return false;
  }
  if (!mem_.ptr(s.desc, desc_bytes(s.size)) || !mem_.ptr(s.avail, avail_bytes(s.size)) ||
      !mem_.ptr(s.used, used_bytes(s.size))) {
    why = "ring outside guest memory";
    return false;
  }
  return true;
}

bool Virtqueue::enable(std::string& why) {
  if (!check_config(st_, why)) return false;
  st_.ready = true;
  return true;
}

bool Virtqueue::set_state(const VirtqueueState& s, std::string& why) {
  if (s.ready && !check_config(s, why)) return false;
  st_ = s;
  return true;
}

uint16_t Virtqueue::load_avail_idx() const {
  // enable() proved the ring is inside RAM and 2-byte aligned.
  auto* p = reinterpret_cast<uint16_t*>(mem_.ptr(st_.avail + 2, 2));
  return std::atomic_ref<uint16_t>(*p).load(std::memory_order_acquire);
}

Virtqueue::Pop Virtqueue::pop(DescChain& out, std::string& why) {
  out.head = 0;
  out.segments.clear();
  out.readable_bytes = out.writable_bytes = 0;
  if (!st_.ready) return Pop::Empty;
  uint16_t avail_idx = load_avail_idx();
  uint16_t pending = static_cast<uint16_t>(avail_idx - st_.next_avail);
  if (pending == 0) return Pop::Empty;
  if (pending > st_.size) {
    why = "driver published " + std::to_string(pending) + " chains on a queue of " +
          std::to_string(st_.size);
    return Pop::Bad;
  }
  uint16_t head = 0;
  mem_.read_obj(st_.avail + 4 + 2ULL * (st_.next_avail % st_.size), head);  // in range: enable()
  st_.next_avail++;
  out.head = head;
  if (head >= st_.size) {
    why = "chain head " + std::to_string(head) + " out of range";
    return Pop::Bad;
  }
  uint16_t idx = head;
  for (uint32_t count = 0;; count++) {
    if (count >= st_.size) {
      why = "descriptor chain longer than the queue (loop)";
      return Pop::Bad;
    }
    RawDesc d{};
    mem_.read_obj(st_.desc + 16ULL * idx, d);  // idx < size: inside the validated table
    if (d.flags & kDescFIndirect) {
      why = "indirect descriptor (not negotiated)";
      return Pop::Bad;
    }
    if (!mem_.ptr(d.addr, d.len)) {
      why = "descriptor buffer outside guest memory";
      return Pop::Bad;
    }
    bool writable = d.flags & kDescFWrite;
    if (!writable && out.writable_bytes > 0) {
      why = "device-readable descriptor after a writable one";
      return Pop::Bad;
    }
    (writable ? out.writable_bytes : out.readable_bytes) += d.len;
    if (out.readable_bytes + out.writable_bytes > kMaxChainBytes) {
      why = "descriptor chain longer than 4 GiB";
      return Pop::Bad;
    }
    out.segments.push_back({d.addr, d.len, writable});
    if (!(d.flags & kDescFNext)) break;
    if (d.next >= st_.size) {
      why = "next descriptor " + std::to_string(d.next) + " out of range";
      return Pop::Bad;
    }
    idx = d.next;
  }
  return Pop::Chain;
}

void Virtqueue::push_used(uint16_t head, uint32_t len) {
  if (!st_.ready) return;
  uint64_t elem = st_.used + 4 + 8ULL * (st_.next_used % st_.size);
  uint32_t e[2] = {head, len};
  mem_.write(elem, e, sizeof e);  // in range: enable()
  st_.next_used++;
  auto* p = reinterpret_cast<uint16_t*>(mem_.ptr(st_.used + 2, 2));
  // seq_cst (a locked xchg on x86): the store is ordered before the flags read in
  // needs_interrupt(), so a driver re-enabling interrupts concurrently is never missed.
  std::atomic_ref<uint16_t>(*p).store(st_.next_used, std::memory_order_seq_cst);
}

bool Virtqueue::needs_interrupt() const {
  if (!st_.ready) return false;
  auto* p = reinterpret_cast<uint16_t*>(mem_.ptr(st_.avail, 2));
  uint16_t flags = std::atomic_ref<uint16_t>(*p).load(std::memory_order_seq_cst);
  return !(flags & kAvailFNoInterrupt);
}

namespace {
// Walks the readable or writable segments overlapping [offset, offset+len), calling
// fn(host_ptr, n) for each piece; returns the bytes covered.
template <class Fn>
uint64_t walk(const memory::GuestMemory& mem, const DescChain& chain, bool writable,
              uint64_t offset, uint64_t len, Fn fn) {
  uint64_t done = 0;
  for (const auto& s : chain.segments) {
    if (s.writable != writable) continue;
    if (done == len) break;
    if (offset >= s.len) {
      offset -= s.len;
      continue;
    }
    uint64_t n = std::min<uint64_t>(s.len - offset, len - done);
    uint8_t* p = mem.ptr(s.gpa + offset, n);
    if (!p) break;  // cannot happen for a popped chain; stay safe anyway
    fn(p, n);
    done += n;
    offset = 0;
  }
  return done;
}
}  // namespace

size_t chain_read(const memory::GuestMemory& mem, const DescChain& chain, uint64_t offset,
                  std::span<uint8_t> out) {
  uint8_t* dst = out.data();
  return walk(mem, chain, false, offset, out.size(), [&](uint8_t* p, uint64_t n) {
    std::memcpy(dst, p, n);
    dst += n;
  });
}

size_t chain_write(const memory::GuestMemory& mem, const DescChain& chain, uint64_t offset,
                   std::span<const uint8_t> in) {
  const uint8_t* src = in.data();
  return walk(mem, chain, true, offset, in.size(), [&](uint8_t* p, uint64_t n) {
    std::memcpy(p, src, n);
    src += n;
  });
}

std::vector<iovec> chain_iovecs(const memory::GuestMemory& mem, const DescChain& chain,
                                bool writable, uint64_t offset, uint64_t len) {
  std::vector<iovec> v;
  walk(mem, chain, writable, offset, len, [&](uint8_t* p, uint64_t n) {
    v.push_back({p, static_cast<size_t>(n)});
  });
  return v;
}

}  // namespace space::devices
