// VirtioBlock: the virtio-blk device model over an open file or block device. One request queue,
// processed synchronously on the notifying vCPU thread (under the device mutex): IN and OUT go
// straight between the file and guest memory with preadv/pwritev over the chain's segments,
// FLUSH is a real fdatasync, GET_ID returns the serial. Offers VIRTIO_BLK_F_FLUSH, SEG_MAX and
// SIZE_MAX, and VIRTIO_BLK_F_RO when read-only (writes then fail with IOERR). The capacity is the
// file size in 512-byte sectors at construction. A device built without a file is an empty slot
// (capacity 0, every transfer fails): the machine's second disk, which a template is snapshotted
// with and a restore fills with the sandbox's image. Malformed requests (no status byte, header too
// short, data not a whole number of sectors, beyond the capacity) fail with IOERR or UNSUPP; a
// malformed ring marks the device broken. The device keeps no state beyond its queue.
#pragma once
#include <string>

#include "devices/virtio/backend.h"
#include "util/fd.h"
#include "util/log.h"

namespace space::devices {

class VirtioBlock final : public VirtioBackend {
 public:
  static constexpr uint16_t kQueueSize = 256;
  static constexpr uint32_t kSegMax = kQueueSize - 2;  // plus header and status descriptors
  static constexpr uint32_t kSizeMax = 1u << 20;
  static constexpr size_t kSerialLen = 20;  // VIRTIO_BLK_ID_BYTES

  struct Options {
    bool read_only = false;
    std::string serial;  // up to 20 bytes are reported by GET_ID
  };

  // Serves `file` (opened O_RDWR, or O_RDONLY with read_only), or nothing when `file` is not
  // open (no medium). Throws space::Error if its size cannot be read.
  VirtioBlock(Fd file, Options options);

  bool has_medium() const { return static_cast<bool>(file_); }
  // fdatasync of the backing file (snapshots: a copy made afterwards matches the guest's view).
  // Throws space::Error on failure.
  void sync();

  uint32_t device_id() const override { return virtio::kIdBlock; }
  uint64_t device_features() const override;
  size_t num_queues() const override { return 1; }
  uint16_t queue_max_size(size_t) const override { return kQueueSize; }
  void read_config(uint64_t offset, std::span<uint8_t> data) override;
  void activate() override {}
  void notify(size_t index) override;
  void reset() override {}

 private:
  mutable log::Throttle warn_;  // what the guest provokes is rate-limited
  // Executes one request; returns the bytes written into the chain (data + status byte).
  uint32_t handle(const DescChain& chain);

  Fd file_;
  Options opts_;
  uint64_t capacity_ = 0;
};

}  // namespace space::devices
