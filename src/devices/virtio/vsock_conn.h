// VsockConnection: the state of one stream between a guest port and a host Unix socket, as plain
// data plus the credit arithmetic; VirtioVsock drives it. Credit (virtio 1.x "Flow Control"):
// we advertise buf_alloc bytes of buffer and fwd_cnt, the count of guest bytes delivered to the
// host socket, so the guest never has more than buf_alloc bytes in `to_host`; we read from the
// host socket only as much as the guest's advertised credit allows, so nothing host->guest is
// buffered here at all. Control packets owed to the guest are bits in `pending`, so a guest that
// posts no RX buffers cannot make them pile up.
#pragma once
#include <compare>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "devices/virtio/vsock_packet.h"
#include "util/fd.h"

namespace space::devices {

// (host-side port, guest-side port): identifies a connection.
struct VsockKey {
  uint32_t local_port = 0;
  uint32_t peer_port = 0;
  auto operator<=>(const VsockKey&) const = default;
};

// A FIFO of bytes with amortised O(1) append and consume.
class ByteQueue {
 public:
  size_t size() const { return buf_.size() - head_; }
  bool empty() const { return size() == 0; }
  std::span<const uint8_t> front() const { return {buf_.data() + head_, size()}; }
  // Appends `n` bytes and returns where to write them.
  uint8_t* append(size_t n) {
    if (head_ > 0 && head_ >= buf_.size() / 2) {
      buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    buf_.resize(buf_.size() + n);
    return buf_.data() + buf_.size() - n;
  }
  // Drops the first `n` (<= size()) bytes.
  void consume(size_t n) {
    head_ += n;
    if (head_ == buf_.size()) clear();
  }
  void clear() {
    buf_.clear();
    buf_.shrink_to_fit();
    head_ = 0;
  }

 private:
  std::vector<uint8_t> buf_;
  size_t head_ = 0;
};

struct VsockConnection {
  enum class State {
    Connecting,   // host-initiated: REQUEST owed or sent, waiting for RESPONSE
    Established,  // bridging
    Closing,      // host socket closed; an RST is owed to the guest, then the entry goes
  };
  // Control packets owed to the guest, sent in this priority order.
  static constexpr uint32_t kSendRst = 1, kSendRequest = 2, kSendResponse = 4, kSendShutdown = 8,
                            kSendCreditUpdate = 16;

  VsockKey key;
  uint64_t id = 0;  // unique per device lifetime; EventLoop handlers check it
  State state = State::Connecting;
  Fd sock;                  // the host Unix socket (invalid once closed)
  bool registered = false;  // sock is watched by the EventLoop
  uint32_t epoll_mask = 0;  // events currently requested
  uint32_t pending = 0;
  uint32_t shutdown_flags = 0;  // flags for the owed SHUTDOWN

  // Our side of the credit.
  uint32_t buf_alloc = 0;
  uint32_t fwd_cnt = 0;            // guest bytes written to the host socket
  uint32_t last_fwd_cnt_sent = 0;  // fwd_cnt the guest last heard of
  ByteQueue to_host;               // guest bytes the host socket has not taken yet
  // The guest's side.
  uint32_t peer_buf_alloc = 0;
  uint32_t peer_fwd_cnt = 0;
  uint32_t rx_cnt = 0;  // host bytes sent to the guest

  bool host_readable = false;  // EPOLLIN seen and not yet drained to EAGAIN (EPOLLIN disarmed)
  bool host_eof = false;       // the host socket will give no more data
  bool host_hup = false;       // the host peer is gone entirely
  bool host_shut_wr = false;   // we shut the host socket's write side
  bool guest_shut_send = false;
  bool guest_shut_rcv = false;
  bool in_rx_queue = false;  // listed in VirtioVsock's RX schedule

  // Bytes we may still send the guest.
  uint32_t peer_credit() const { return vsock::peer_credit(peer_buf_alloc, peer_fwd_cnt, rx_cnt); }
  // Whether host data may be read now (established, open, guest willing, credit left).
  bool can_read_host() const {
    return state == State::Established && sock.valid() && !host_eof && !guest_shut_rcv &&
           peer_credit() > 0;
  }
  // Whether the RX path has something to send for this connection.
  bool has_rx_work() const { return pending != 0 || (host_readable && can_read_host()); }
};

}  // namespace space::devices
