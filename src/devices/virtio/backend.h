// The seam between a virtio transport and a device model. A VirtioTransport (VirtioMmio) owns the
// registers, the negotiated features, the virtqueues and the interrupt; a VirtioBackend (block,
// rng, vsock) owns the device semantics: its id, feature bits, config space and what a queue
// notification means. The transport calls the backend with its device mutex held; a backend that
// does work on another thread (vsock on the EventLoop) locks transport.device_mutex() first, so
// every backend and transport method runs under that one mutex.
#pragma once
#include <cstdint>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "devices/virtio/queue.h"
#include "memory/guest_memory.h"

namespace space::devices {

namespace virtio {
// Device status bits (virtio 1.x "Device Status Field").
constexpr uint32_t kStatusAcknowledge = 1;
constexpr uint32_t kStatusDriver = 2;
constexpr uint32_t kStatusDriverOk = 4;
constexpr uint32_t kStatusFeaturesOk = 8;
constexpr uint32_t kStatusNeedsReset = 64;
constexpr uint32_t kStatusFailed = 128;
// Transport-level feature bits.
constexpr uint64_t kFVersion1 = 1ULL << 32;
// Device ids.
constexpr uint32_t kIdBlock = 2;
constexpr uint32_t kIdRng = 4;
constexpr uint32_t kIdVsock = 19;
}  // namespace virtio

// What a backend may ask of its transport. Every call requires device_mutex() to be held.
class VirtioTransport {
 public:
  virtual ~VirtioTransport() = default;
  // The one mutex that serialises the transport and its backend (the Device's mutex()).
  virtual std::mutex& device_mutex() = 0;
  virtual const memory::GuestMemory& memory() const = 0;
  // Queue `index` (< backend num_queues()).
  virtual Virtqueue& queue(size_t index) = 0;
  // Features the driver accepted (valid once FEATURES_OK is set).
  virtual uint64_t driver_features() const = 0;
  // Raises the used-buffer interrupt for `queue`, unless the driver suppressed it.
  virtual void signal_used(size_t queue) = 0;
  // Bumps ConfigGeneration and raises the configuration-change interrupt.
  virtual void signal_config() = 0;
  // Logs `why` and marks the device broken (DEVICE_NEEDS_RESET) until the driver resets it.
  virtual void fail(std::string_view why) = 0;
  // True once the driver set DRIVER_OK and the device is not broken: queues may be processed.
  virtual bool running() const = 0;
};

// A virtio device model. All methods run with the transport's device mutex held.
class VirtioBackend {
 public:
  virtual ~VirtioBackend() = default;
  virtual uint32_t device_id() const = 0;
  // Device-specific feature bits offered (the transport adds VIRTIO_F_VERSION_1).
  virtual uint64_t device_features() const = 0;
  virtual size_t num_queues() const = 0;
  // Largest size (a power of two) the driver may give queue `index`.
  virtual uint16_t queue_max_size(size_t index) const = 0;
  // Reads device config bytes at `offset`; bytes beyond the config space read as zero.
  virtual void read_config(uint64_t offset, std::span<uint8_t> data) = 0;
  // Writes device config bytes; the default ignores them (read-only config).
  virtual void write_config(uint64_t /*offset*/, std::span<const uint8_t> /*data*/) {}
  // Called once by the transport's constructor; the transport outlives the backend's use of it.
  virtual void attach(VirtioTransport& transport) { transport_ = &transport; }
  // The driver set DRIVER_OK (or a snapshot of a running device was restored).
  virtual void activate() = 0;
  // The driver notified queue `index` (a ready queue of a running device).
  virtual void notify(size_t index) = 0;
  // Device reset (driver wrote status 0, or a restore begins): drop all in-flight work.
  virtual void reset() = 0;
  // Backend state beyond the transport's registers and queues, as plain bytes.
  virtual std::vector<uint8_t> save_state() const { return {}; }
  // Inverse of save_state(); throws space::Error on malformed data.
  virtual void restore_state(std::span<const uint8_t> /*state*/) {}

 protected:
  VirtioTransport* transport_ = nullptr;
};

// Serves every available chain of queue `index`: `handle(chain)` does the work and returns the
// bytes written to the guest; each chain goes to the used ring, and the guest is signalled once.
// A malformed chain marks the device broken (DEVICE_NEEDS_RESET) and stops.
template <class Handle>
void serve_queue(VirtioTransport& t, size_t index, const char* device, Handle handle) {
  Virtqueue& q = t.queue(index);
  DescChain chain;
  std::string why;
  bool any = false;
  for (;;) {
    auto r = q.pop(chain, why);
    if (r == Virtqueue::Pop::Empty) break;
    if (r == Virtqueue::Pop::Bad) {
      t.fail(std::string(device) + ": " + why);
      break;
    }
    q.push_used(chain.head, handle(chain));
    any = true;
  }
  if (any) t.signal_used(index);
}

// Copies the window [offset, offset+out.size()) of a config-space image into `out`, zero-filling
// anything past its end.
inline void copy_config(std::span<const uint8_t> image, uint64_t offset, std::span<uint8_t> out) {
  for (size_t i = 0; i < out.size(); i++)
    out[i] = offset + i < image.size() ? image[offset + i] : 0;
}

}  // namespace space::devices
