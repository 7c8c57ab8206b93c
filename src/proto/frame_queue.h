// FrameQueue: encoded frames waiting to go out on a non-blocking stream socket, shared by the
// host (space exec) and guest-init. One flush() is one sendmsg() gathering every queued frame,
// so a burst (an output chunk, two EOFs and Exit) costs one syscall; what the socket does not
// take stays queued. Data is read straight into a frame's buffer (reserve, then commit), never
// copied, and the buffers of sent frames are kept for reuse: in a guest every fresh page is an
// expensive fault. The caller bounds memory by checking bytes() before producing more.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "proto/agent.h"

namespace space::proto {

class FrameQueue {
 public:
  // Room for a payload of up to `cap` bytes (cap <= kMaxPayload) in the next frame; write it
  // at the returned pointer, then commit(). Valid until the next reserve(), push() or commit().
  uint8_t* reserve(size_t cap);
  // Queues the reserved frame with the first `len` bytes written as its payload.
  void commit(Type type, size_t len);
  // Queues a frame with a copy of `payload`. Throws ProtoError if it is above kMaxPayload.
  void push(Type type, std::span<const uint8_t> payload = {});
  // Sends what the socket takes without blocking (MSG_DONTWAIT, MSG_NOSIGNAL). False if the
  // socket failed (errno set: EPIPE, ECONNRESET...); EAGAIN is not a failure.
  bool flush(int fd);
  // Bytes queued and not yet sent.
  size_t bytes() const { return bytes_; }
  bool empty() const { return frames_.empty(); }

 private:
  struct Buf {
    std::unique_ptr<uint8_t[]> data;
    size_t cap = 0, len = 0;
  };
  Buf take(size_t need);
  void recycle(Buf b);

  std::deque<Buf> frames_;
  size_t front_sent_ = 0;  // bytes of frames_.front() already sent
  size_t bytes_ = 0;
  Buf open_;
  std::vector<Buf> spare_;
};

}  // namespace space::proto
