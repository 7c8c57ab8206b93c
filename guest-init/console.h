// Console: guest-init's log sink. Each message becomes one line "guest-init: <msg>\n" written
// with a single write() (so lines from several threads never interleave) to a descriptor the
// caller owns: /dev/console as PID 1 (the VMM's serial port, i.e. console.log), stderr in the
// --serve-unix test mode. Writing never fails loudly: a log line is never worth dying for.
#pragma once
#include <string_view>

namespace space::guest {

class Console {
 public:
  explicit Console(int fd = 2) : fd_(fd) {}
  // Writes "guest-init: <msg>\n"; thread-safe, never throws.
  void log(std::string_view msg) const noexcept;
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace space::guest
