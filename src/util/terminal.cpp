// Raw mode and window size through termios and TIOCGWINSZ.
#include "util/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include "util/error.h"

namespace space::term {

std::optional<Size> window_size(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0) return std::nullopt;
  return Size{ws.ws_row, ws.ws_col};
}

RawMode::RawMode(int fd) : fd_(fd) {
  if (!::isatty(fd) || ::tcgetattr(fd, &saved_) != 0) return;
  termios raw = saved_;
  ::cfmakeraw(&raw);
  if (::tcsetattr(fd, TCSANOW, &raw) != 0) throw_errno("put the terminal in raw mode");
  active_ = true;
}

RawMode::~RawMode() {
  if (active_) ::tcsetattr(fd_, TCSANOW, &saved_);
}

}  // namespace space::term
