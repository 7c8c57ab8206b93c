// The caller's terminal, for `space exec -t`: raw mode while attached and the window size.
// RawMode changes the terminal only if the fd is one, and always puts the saved settings back
// when it is destroyed (the exec path catches every error, so destructors run).
#pragma once
#include <termios.h>

#include <cstdint>
#include <optional>

namespace space::term {

struct Size {
  uint16_t rows = 0, cols = 0;
};

// The window size of terminal `fd`; nullopt if it is not a terminal or reports 0x0.
std::optional<Size> window_size(int fd);

class RawMode {
 public:
  // Puts terminal `fd` in raw mode (no echo, no line editing, no signal keys, no output
  // processing). Does nothing if `fd` is not a terminal. Throws Error if tcsetattr fails.
  explicit RawMode(int fd);
  ~RawMode();
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;
  // True if the terminal was changed.
  bool active() const { return active_; }

 private:
  int fd_;
  bool active_ = false;
  termios saved_{};
};

}  // namespace space::term
