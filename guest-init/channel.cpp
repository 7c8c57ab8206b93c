// Channel::send: frame encoding plus a send() loop that survives EINTR and partial writes.
#include "channel.h"

#include <sys/socket.h>

#include <cerrno>

namespace space::guest {

bool Channel::send(proto::Type type, std::span<const uint8_t> payload) noexcept {
  try {
    auto frame = proto::encode_frame(type, payload);
    std::lock_guard lock(mu_);
    size_t off = 0;
    while (off < frame.size()) {
      ssize_t n = ::send(fd_.get(), frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      off += static_cast<size_t>(n);
    }
    return true;
  } catch (...) {
    return false;
  }
}

bool Channel::send_error(const std::string& message) noexcept {
  try {
    return send(proto::Type::Error, proto::ErrorMsg{.message = message}.encode());
  } catch (...) {
    return false;
  }
}

}  // namespace space::guest
