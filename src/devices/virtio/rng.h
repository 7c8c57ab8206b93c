// VirtioRng: virtio-rng (entropy device) filling each request's writable buffers from the host's
// getrandom(), at most kMaxPerRequest bytes per request so a guest cannot make one notification
// arbitrarily expensive. One queue, processed on the notifying vCPU thread; no features, no
// config, no state beyond the queue.
#pragma once
#include "devices/virtio/backend.h"

namespace space::devices {

class VirtioRng final : public VirtioBackend {
 public:
  static constexpr uint16_t kQueueSize = 256;
  static constexpr uint32_t kMaxPerRequest = 64 * 1024;

  uint32_t device_id() const override { return virtio::kIdRng; }
  uint64_t device_features() const override { return 0; }
  size_t num_queues() const override { return 1; }
  uint16_t queue_max_size(size_t) const override { return kQueueSize; }
  void read_config(uint64_t offset, std::span<uint8_t> data) override {
    copy_config({}, offset, data);
  }
  void activate() override {}
  void notify(size_t index) override;
  void reset() override {}
};

}  // namespace space::devices
