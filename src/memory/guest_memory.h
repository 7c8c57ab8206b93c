// GuestMemory: the guest's RAM as one host mapping starting at guest-physical address 0.
// It is MAP_PRIVATE: anonymous for a cold boot, or a private mapping of a memory file after a
// restore, so restores and branches share pages copy-on-write. Every access from device code goes
// through the bounds-checked helpers here: guest addresses and lengths are hostile input.
// RAM sits below the MMIO window (kMmioBase), so guests are limited to kMaxBytes.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "util/fd.h"
#include "util/mmap.h"

namespace space::memory {

class GuestMemory {
 public:
  static constexpr uint64_t kMmioBase = 0xd0000000ULL;  // virtio-mmio and other MMIO above here
  static constexpr uint64_t kMaxBytes = 0xc0000000ULL;  // 3 GiB of RAM at most

  // Anonymous private RAM of `bytes` (a multiple of 4 KiB, <= kMaxBytes). Throws on failure.
  static GuestMemory anonymous(uint64_t bytes);
  // Private (copy-on-write) mapping of `bytes` from an open memory file. Throws on failure.
  static GuestMemory from_file(int fd, uint64_t bytes);
  // Takes over an existing private mapping: a branch's VMM, forked from its source, adopts the
  // guest memory it inherited (copy-on-write). `base` must be a live mapping of `bytes`.
  static GuestMemory adopt(uint8_t* base, uint64_t bytes);

  uint8_t* host_base() const { return map_.data(); }
  uint64_t size() const { return map_.size(); }

  // Host pointer for [gpa, gpa+len), or nullptr when any byte of it lies outside RAM.
  uint8_t* ptr(uint64_t gpa, uint64_t len) const {
    if (len > size() || gpa > size() - len) return nullptr;
    return map_.data() + gpa;
  }
  // Copies out of guest RAM; false (and nothing copied) when out of range.
  bool read(uint64_t gpa, void* dst, uint64_t len) const {
    const uint8_t* p = ptr(gpa, len);
    if (!p) return false;
    std::memcpy(dst, p, len);
    return true;
  }
  // Copies into guest RAM; false (and nothing copied) when out of range.
  bool write(uint64_t gpa, const void* src, uint64_t len) const {
    uint8_t* p = ptr(gpa, len);
    if (!p) return false;
    std::memcpy(p, src, len);
    return true;
  }
  template <class T>
  bool read_obj(uint64_t gpa, T& out) const {
    return read(gpa, &out, sizeof(T));
  }
  template <class T>
  bool write_obj(uint64_t gpa, const T& in) const {
    return write(gpa, &in, sizeof(T));
  }

 private:
  explicit GuestMemory(Mapping m) : map_(std::move(m)) {}
  Mapping map_;
};

}  // namespace space::memory
