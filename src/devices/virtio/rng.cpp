// virtio-rng request handling: getrandom() straight into the chain's writable segments.
#include "devices/virtio/rng.h"

#include <sys/random.h>

#include <cerrno>

#include "util/log.h"

namespace space::devices {
namespace {
// Fills [p, p+n) with host entropy; false if getrandom fails.
bool fill_random(uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t got = ::getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}
}  // namespace

void VirtioRng::notify(size_t index) {
  if (index != 0 || !transport_->running()) return;
  serve_queue(*transport_, 0, "virtio-rng", [this](const DescChain& chain) {
    uint32_t filled = 0;
    for (const auto& iov : chain_iovecs(transport_->memory(), chain, true, 0, kMaxPerRequest)) {
      if (!fill_random(static_cast<uint8_t*>(iov.iov_base), iov.iov_len)) {
        log::warn("virtio-rng: getrandom failed");
        break;
      }
      filled += static_cast<uint32_t>(iov.iov_len);
    }
    return filled;
  });
}

}  // namespace space::devices
