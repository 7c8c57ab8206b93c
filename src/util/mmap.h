// Mapping: the owner of one mmap()ed region; munmap on destruction. Move-only.
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace space {

class Mapping {
 public:
  Mapping() = default;
  Mapping(void* addr, size_t len) : addr_(addr), len_(len) {}
  Mapping(Mapping&& o) noexcept
      : addr_(std::exchange(o.addr_, nullptr)), len_(std::exchange(o.len_, 0)) {}
  Mapping& operator=(Mapping&& o) noexcept {
    if (this != &o) {
      reset();
      addr_ = std::exchange(o.addr_, nullptr);
      len_ = std::exchange(o.len_, 0);
    }
    return *this;
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { reset(); }

  // mmap() wrapper; throws Error with `what` on failure.
  static Mapping map(size_t len, int prot, int flags, int fd, off_t off, const char* what);

  uint8_t* data() const { return static_cast<uint8_t*>(addr_); }
  size_t size() const { return len_; }
  void reset() {
    if (addr_) ::munmap(addr_, len_);
    addr_ = nullptr;
    len_ = 0;
  }

 private:
  void* addr_ = nullptr;
  size_t len_ = 0;
};

}  // namespace space
