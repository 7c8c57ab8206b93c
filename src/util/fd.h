// Fd: the owner of one file descriptor. Move-only; closes on destruction. Every fd the project
// opens lives in one of these, so no path leaks a descriptor. The only raw close() is in fd.cpp.
#pragma once
#include <cstddef>
#include <utility>

namespace space {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }
  // Gives up ownership without closing.
  int release() { return std::exchange(fd_, -1); }
  // Closes the current fd (if any) and owns `fd` instead.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Closes every descriptor of this process but those in `keep` (sorted in place; duplicates and
// negative entries ignored). It allocates nothing, so a forked child may call it; returns false
// if a close_range() failed.
bool close_all_but(int* keep, size_t n);

// Pipe pair, both ends O_CLOEXEC. Throws on failure.
struct Pipe {
  Fd read, write;
  static Pipe make();
};

// Sets or clears O_NONBLOCK. Throws on failure.
void set_nonblocking(int fd, bool on = true);
// Writes all of buf, retrying on EINTR/partial writes; blocking fds only. Throws on failure.
void write_all(int fd, const void* buf, size_t len);
// Reads exactly len bytes unless EOF comes first; returns the count read. Throws on failure.
size_t read_full(int fd, void* buf, size_t len);

}  // namespace space
