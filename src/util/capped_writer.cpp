// Size-capped log writer; see capped_writer.h.
#include "util/capped_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace space {

CappedWriter::CappedWriter(int fd, uint64_t max_bytes) : fd_(fd), max_(max_bytes) {
  struct stat st {};
  if (fd_ >= 0 && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) {
    regular_ = true;
    size_ = static_cast<uint64_t>(st.st_size);
  }
}

uint64_t CappedWriter::size() const {
  std::lock_guard g(mu_);
  return size_;
}

void CappedWriter::write_all(std::string_view bytes) noexcept {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    size_ += static_cast<uint64_t>(n);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void CappedWriter::write(std::string_view bytes) noexcept {
  if (fd_ < 0 || bytes.empty()) return;
  std::lock_guard g(mu_);
  if (size_ + bytes.size() <= max_) {
    write_all(bytes);
    return;
  }
  if (!regular_) return;  // a pipe cannot be restarted: what is over the limit is dropped
  restarts_++;
  if (::ftruncate(fd_, 0) != 0) {
    regular_ = false;
    return;
  }
  ::lseek(fd_, 0, SEEK_SET);  // for an fd without O_APPEND
  size_ = 0;
  std::string marker = "[space: this log reached its limit of " + std::to_string(max_) +
                       " bytes (restart " + std::to_string(restarts_) +
                       "); the output before this line was dropped]\n";
  if (marker.size() < max_) write_all(marker);
  uint64_t room = max_ - size_;
  if (bytes.size() > room) bytes.remove_prefix(bytes.size() - room);  // keep the newest
  write_all(bytes);
}

}  // namespace space
