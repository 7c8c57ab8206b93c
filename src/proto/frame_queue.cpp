// FrameQueue: a deque of owned buffers, a sendmsg() gather over them, and a small free list.
#include "proto/frame_queue.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace space::proto {
namespace {
constexpr size_t kMaxSpare = 8;
constexpr size_t kMaxIov = 64;
constexpr size_t kCopyAbove = 64 * 1024;
}  // namespace

FrameQueue::Buf FrameQueue::take(size_t need) {
  size_t best = spare_.size();
  const size_t too_big = std::max(4 * need, kCopyAbove);  // would waste memory on a small frame
  for (size_t i = 0; i < spare_.size(); i++)
    if (spare_[i].cap >= need && spare_[i].cap <= too_big &&
        (best == spare_.size() || spare_[i].cap < spare_[best].cap))
      best = i;
  if (best == spare_.size()) return Buf{std::make_unique_for_overwrite<uint8_t[]>(need), need, 0};
  Buf b = std::move(spare_[best]);
  spare_.erase(spare_.begin() + static_cast<ptrdiff_t>(best));
  return b;
}

void FrameQueue::recycle(Buf b) {
  if (spare_.size() < kMaxSpare) spare_.push_back(std::move(b));
}

uint8_t* FrameQueue::reserve(size_t cap) {
  if (cap > kMaxPayload) throw ProtoError("frame payload too large");
  size_t need = kHeaderSize + cap;
  if (open_.cap < need) {
    if (open_.data) recycle(std::move(open_));
    open_ = take(need);
  }
  return open_.data.get() + kHeaderSize;
}

void FrameQueue::commit(Type type, size_t len) {
  uint32_t n = static_cast<uint32_t>(len);
  uint16_t t = static_cast<uint16_t>(type), reserved = 0;
  std::memcpy(open_.data.get(), &n, 4);
  std::memcpy(open_.data.get() + 4, &t, 2);
  std::memcpy(open_.data.get() + 6, &reserved, 2);
  const size_t total = kHeaderSize + len;
  bytes_ += total;
  if (open_.cap > kCopyAbove && total < open_.cap / 4) {
    // A short read into a big buffer: queue a right-sized copy and keep the big one open, so
    // queued memory stays close to bytes() however many small frames wait.
    Buf small = take(total);
    std::memcpy(small.data.get(), open_.data.get(), total);
    small.len = total;
    frames_.push_back(std::move(small));
    return;
  }
  open_.len = total;
  frames_.push_back(std::move(open_));
  open_ = Buf{};
}

void FrameQueue::push(Type type, std::span<const uint8_t> payload) {
  uint8_t* p = reserve(payload.size());
  if (!payload.empty()) std::memcpy(p, payload.data(), payload.size());
  commit(type, payload.size());
}

bool FrameQueue::flush(int fd) {
  while (!frames_.empty()) {
    iovec iov[kMaxIov];
    size_t n = 0, total = 0;
    for (auto it = frames_.begin(); it != frames_.end() && n < kMaxIov; ++it, ++n) {
      size_t skip = n == 0 ? front_sent_ : 0;
      iov[n] = {it->data.get() + skip, it->len - skip};
      total += it->len - skip;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    ssize_t sent = ::sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    auto left = static_cast<size_t>(sent);
    bytes_ -= left;
    const bool partial = left < total;
    while (left > 0) {
      Buf& f = frames_.front();
      size_t rest = f.len - front_sent_;
      if (left < rest) {
        front_sent_ += left;
        break;
      }
      left -= rest;
      front_sent_ = 0;
      recycle(std::move(f));
      frames_.pop_front();
    }
    if (partial) return true;  // the socket is full for now
  }
  return true;
}

}  // namespace space::proto
