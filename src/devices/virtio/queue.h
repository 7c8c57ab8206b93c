// Virtqueue: one split virtqueue (virtio 1.x, "Split Virtqueues") living in guest RAM. The
// transport sets its size and ring addresses; the device pops available descriptor chains as
// lists of (gpa, len, writable) segments and pushes used (id, len) entries back.
// Everything in the rings is hostile guest input: enable() checks that the size is a power of two
// within the maximum and that the three rings lie inside RAM with the spec's alignment; pop()
// bounds a chain by the queue size (so loops end), rejects descriptor indexes >= size, segments
// outside RAM, readable-after-writable segments, totals above 4 GiB and indirect descriptors
// (VIRTIO_RING_F_INDIRECT_DESC is not offered). A bad chain is reported as Pop::Bad with a reason,
// never acted on. Without VIRTIO_F_EVENT_IDX, notification suppression is the avail ring's
// NO_INTERRUPT flag, which needs_interrupt() honours. The ring indexes are read and written with
// acquire/release ordering because the guest's vCPUs update them concurrently.
#pragma once
#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memory/guest_memory.h"
#include "util/field_list.h"

namespace space::devices {

// One guest buffer of a descriptor chain; validated to lie inside guest RAM.
struct DescSegment {
  uint64_t gpa = 0;
  uint32_t len = 0;
  bool writable = false;  // device-writable (VIRTQ_DESC_F_WRITE)
};

// One available descriptor chain: device-readable segments first, then device-writable ones.
struct DescChain {
  uint16_t head = 0;  // the id to give back in push_used()
  std::vector<DescSegment> segments;
  uint64_t readable_bytes = 0;
  uint64_t writable_bytes = 0;
};

// The transport-visible configuration and the device's ring positions, for snapshots.
struct VirtqueueState {
  uint16_t size = 0;
  bool ready = false;
  uint64_t desc = 0, avail = 0, used = 0;
  uint16_t next_avail = 0, next_used = 0;
  // proto/fields.h
  SPACE_FIELDS(size, ready, desc, avail, used, next_avail, next_used);
};

class Virtqueue {
 public:
  static constexpr uint16_t kMaxSize = 32768;  // the largest size the split ring allows
  static constexpr uint64_t kMaxChainBytes = 0xffffffffULL;  // used.len is 32 bits

  enum class Pop { Empty, Chain, Bad };

  // A queue over `mem` (which must outlive it) accepting sizes up to `max_size` (power of two).
  Virtqueue(const memory::GuestMemory& mem, uint16_t max_size);

  uint16_t max_size() const { return max_size_; }
  // Transport setters; they take effect at the next enable().
  void set_size(uint16_t n) { st_.size = n; }
  void set_desc_addr(uint64_t gpa) { st_.desc = gpa; }
  void set_avail_addr(uint64_t gpa) { st_.avail = gpa; }
  void set_used_addr(uint64_t gpa) { st_.used = gpa; }
  uint16_t size() const { return st_.size; }
  uint64_t desc_addr() const { return st_.desc; }
  uint64_t avail_addr() const { return st_.avail; }
  uint64_t used_addr() const { return st_.used; }

  // Checks the configuration against RAM and marks the queue ready; false (and `why`) if invalid.
  bool enable(std::string& why);
  // Marks the queue not ready (configuration kept).
  void disable() { st_.ready = false; }
  bool ready() const { return st_.ready; }
  // Back to the power-on state: not ready, size max_size, addresses 0, ring positions 0.
  void reset();

  // Takes the next available chain into `out`. Empty: nothing available (or not ready). Bad: the
  // chain (or the ring) is malformed; `why` says how, and the entry is consumed. out.head is then
  // the raw head index, which may be >= size().
  Pop pop(DescChain& out, std::string& why);
  // Gives back the chain popped last, untouched, so the next pop() returns it again.
  void undo_pop() { st_.next_avail--; }
  // Publishes (head, len) on the used ring (len = bytes the device wrote into the chain).
  void push_used(uint16_t head, uint32_t len);
  // Whether the driver wants an interrupt now (false when it set VIRTQ_AVAIL_F_NO_INTERRUPT).
  bool needs_interrupt() const;

  // Snapshot state.
  VirtqueueState state() const { return st_; }
  // Inverse of state(); re-validates a ready queue against RAM, false (and `why`) if invalid.
  bool set_state(const VirtqueueState& s, std::string& why);

 private:
  bool check_config(const VirtqueueState& s, std::string& why) const;
  uint16_t load_avail_idx() const;

  const memory::GuestMemory& mem_;
  uint16_t max_size_;
  VirtqueueState st_;
};

// Copies up to out.size() bytes of the chain's readable bytes, starting `offset` bytes in.
// Returns the count copied (short when the chain has fewer readable bytes).
size_t chain_read(const memory::GuestMemory& mem, const DescChain& chain, uint64_t offset,
                  std::span<uint8_t> out);
// Copies `in` into the chain's writable bytes starting `offset` bytes in; returns the count copied.
size_t chain_write(const memory::GuestMemory& mem, const DescChain& chain, uint64_t offset,
                   std::span<const uint8_t> in);
// Host iovecs covering [offset, offset+len) of the chain's readable (or writable) bytes, clipped
// to what the chain has; for readv/writev/preadv/pwritev straight into guest memory.
std::vector<iovec> chain_iovecs(const memory::GuestMemory& mem, const DescChain& chain,
                                bool writable, uint64_t offset, uint64_t len);

}  // namespace space::devices
