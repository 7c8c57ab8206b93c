// Console::log: builds the line in a stack buffer (no allocation) and writes it once.
#include "console.h"

#include <unistd.h>

#include <cstring>

namespace space::guest {

void Console::log(std::string_view msg) const noexcept {
  static constexpr std::string_view kPrefix = "guest-init: ";
  char line[1024];
  size_t n = msg.size();
  if (n > sizeof line - kPrefix.size() - 1) n = sizeof line - kPrefix.size() - 1;
  std::memcpy(line, kPrefix.data(), kPrefix.size());
  std::memcpy(line + kPrefix.size(), msg.data(), n);
  line[kPrefix.size() + n] = '\n';
  ssize_t r = ::write(fd_, line, kPrefix.size() + n + 1);
  (void)r;
}

}  // namespace space::guest
