// CappedWriter: a log file that a guest can write to (the serial console) or make us write to
// (warnings about what it did) without filling the store. It keeps at most `max_bytes`: when
// a write would pass the limit, a regular file is truncated and starts again with a one-line
// marker, so the file always holds the newest output; a pipe or terminal just drops what is
// over. Writes are best effort (a failed write is not an error) and thread-safe.
#pragma once
#include <cstdint>
#include <mutex>
#include <string_view>

namespace space {

class CappedWriter {
 public:
  // `fd` is not owned and should be opened O_APPEND; the current size of a regular file counts.
  CappedWriter(int fd, uint64_t max_bytes);
  CappedWriter(const CappedWriter&) = delete;
  CappedWriter& operator=(const CappedWriter&) = delete;

  void write(std::string_view bytes) noexcept;
  int fd() const { return fd_; }
  // Bytes written since the last restart (the file's size for a regular file).
  uint64_t size() const;

 private:
  void write_all(std::string_view bytes) noexcept;

  mutable std::mutex mu_;
  int fd_;
  uint64_t max_;
  uint64_t size_ = 0;
  uint64_t restarts_ = 0;  // times the limit was reached, shown in the marker
  bool regular_ = false;
};

}  // namespace space
