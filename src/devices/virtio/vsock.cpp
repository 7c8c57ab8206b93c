// VirtioVsock, guest-facing half: the backend interface, TX packet handling, the RX scheduler
// that turns owed control packets and readable host data into RX buffers, and the event queue.
// RX fairness: connections with work wait in rx_queue_ and get one buffer per turn.
#include "devices/virtio/vsock.h"

#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"
#include "util/log.h"

namespace space::devices {

using namespace vsock;

namespace {
constexpr int kTxBudget = 256;  // TX chains per loop turn before yielding to other fds
}  // namespace

void VirtioVsock::read_config(uint64_t offset, std::span<uint8_t> data) {
  uint8_t img[8];
  std::memcpy(img, &guest_cid_, 8);
  copy_config(img, offset, data);
}

void VirtioVsock::activate() {
  notify(kRxQueue);
}  // RX work runs on the loop thread

void VirtioVsock::notify(size_t index) {
  if (index == kEventQueue) event_kicked_ = true;  // the guest refilled after handling an event
  uint64_t one = 1;
  ssize_t n = ::write(kick_.get(), &one, sizeof one);  // never blocks; overflow is impossible
  (void)n;
}

void VirtioVsock::reset() {
  detach_all();
  rsts_.clear();
  event_pending_ = false;
  reset_unacked_ = false;
}

void VirtioVsock::reset_transport() {
  detach_all();
  rsts_.clear();
  // The restored guest may still hold sockets of the snapshotted VMM's connections (closed,
  // lingering), keyed by their host ports; a new VMM counting from the same first port would hit
  // them and have its first connections reset. Start host ports at a random point instead.
  uint32_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) r = static_cast<uint32_t>(::getpid());
  next_ephemeral_ = kFirstEphemeralPort + (r & ((1u << 30) - 1));
  event_pending_ = true;
  process_event();
}

void VirtioVsock::State::check() const {
  if (version != kVersion) fail("virtio-vsock: unsupported state version");
}

std::vector<uint8_t> VirtioVsock::save_state() const {
  return proto::encode_fields(State{State::kVersion, guest_cid_});
}

void VirtioVsock::restore_state(std::span<const uint8_t> state) {
  try {
    guest_cid_ = proto::decode_fields<State>(state).guest_cid;
  } catch (proto::ProtoError& e) {
    e.add_context("virtio-vsock: bad state");
    throw;
  }
}

void VirtioVsock::on_kick() {
  std::lock_guard lk(transport_->device_mutex());
  uint64_t v;
  ssize_t n = ::read(kick_.get(), &v, sizeof v);
  (void)n;
  bury_dead();
  if (!transport_->running()) return;
  process_tx();
  if (reset_unacked_ && event_kicked_) reset_unacked_ = false;
  process_event();
  process_rx();
}

// ---- TX: guest -> host ----

void VirtioVsock::process_tx() {
  Virtqueue& q = transport_->queue(kTxQueue);
  DescChain chain;
  std::string why;
  bool any = false;
  for (int i = 0; i < kTxBudget; i++) {
    auto r = q.pop(chain, why);
    if (r == Virtqueue::Pop::Empty) break;
    if (r == Virtqueue::Pop::Bad) {
      transport_->fail("virtio-vsock tx: " + why);
      return;
    }
    handle_tx(chain);
    q.push_used(chain.head, 0);
    any = true;
    if (i + 1 == kTxBudget) notify(kTxQueue);  // more may wait: come back after other fds
  }
  if (any) transport_->signal_used(kTxQueue);
}

void VirtioVsock::handle_tx(const DescChain& chain) {
  const memory::GuestMemory& mem = transport_->memory();
  uint8_t raw[kHeaderSize];
  Header h;
  if (chain_read(mem, chain, 0, raw) != kHeaderSize || !decode_header(raw, h)) {
    warn_.warn("virtio-vsock: tx packet shorter than a header; dropped");
    return;
  }
  if (h.src_cid != guest_cid_) {
    log::debug("virtio-vsock: tx packet with foreign source cid; dropped");
    return;
  }
  if (h.op == kOpRst && !conns_.contains({h.dst_port, h.src_port})) return;
  bool bad_len =
      h.op == kOpRw && (h.len > kMaxPayload || h.len > chain.readable_bytes - kHeaderSize);
  if (h.dst_cid != kHostCid || h.type != kTypeStream || bad_len) {
    if (bad_len) warn_.warn("virtio-vsock: tx packet length exceeds its buffer or the maximum");
    auto it = conns_.find({h.dst_port, h.src_port});
    if (it != conns_.end())
      abort_conn(it->second);
    else
      queue_rst(h);
    return;
  }
  auto it = conns_.find({h.dst_port, h.src_port});
  if (it == conns_.end()) {
    if (h.op == kOpRequest)
      connect_to_host(h);
    else
      queue_rst(h);
    return;
  }
  handle_conn_packet(it->second, h, chain);
}

void VirtioVsock::handle_conn_packet(Conn& c, const Header& h, const DescChain& chain) {
  const VsockKey key = c.key;  // `c` may be erased below; look it up again by key
  if (c.state == Conn::State::Closing) {
    if (h.op == kOpRst || h.op == kOpRequest) erase_conn(key);  // the guest moved on
    if (h.op == kOpRequest) connect_to_host(h);
    return;
  }
  c.peer_buf_alloc = h.buf_alloc;
  c.peer_fwd_cnt = h.fwd_cnt;
  switch (h.op) {
    case kOpResponse: {
      if (c.state != Conn::State::Connecting || (c.pending & Conn::kSendRequest)) {
        abort_conn(c);
        break;
      }
      std::string ok = format_ok_line(c.key.local_port);
      ssize_t n = ::send(c.sock.get(), ok.data(), ok.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n != static_cast<ssize_t>(ok.size())) {
        abort_conn(c);
        break;
      }
      c.state = Conn::State::Established;
      break;
    }
    case kOpRst:
      erase_conn(c.key);  // no reply to an RST
      return;
    case kOpShutdown:
      if (h.flags & kShutdownRcv) c.guest_shut_rcv = true;
      if (h.flags & kShutdownSend) c.guest_shut_send = true;
      maybe_finish(c);
      break;
    case kOpRw:
      if (c.state != Conn::State::Established || c.guest_shut_send) {
        abort_conn(c);
        break;
      }
      if (uint64_t{c.to_host.size()} + h.len > c.buf_alloc) {
        warn_.warn("virtio-vsock: guest exceeded its credit; resetting the connection");
        abort_conn(c);
        break;
      }
      send_to_host(c, chain, h.len);
      break;
    case kOpCreditUpdate:
      break;  // the credit fields were taken above
    case kOpCreditRequest:
      c.pending |= Conn::kSendCreditUpdate;
      break;
    default:
      abort_conn(c);  // REQUEST on a live connection, or an unknown op
  }
  auto it = conns_.find(key);
  if (it == conns_.end()) return;  // erased above
  update_epoll(it->second);
  if (it->second.has_rx_work()) schedule_rx(it->second);
}

void VirtioVsock::queue_rst(const Header& g) {
  if (rsts_.size() >= kMaxQueuedRsts) return;  // a flooding guest loses some replies
  Header r;
  r.src_cid = g.dst_cid;
  r.dst_cid = guest_cid_;
  r.src_port = g.dst_port;
  r.dst_port = g.src_port;
  r.type = kTypeStream;
  r.op = kOpRst;
  rsts_.push_back(r);
}

// ---- RX: host -> guest ----

Header VirtioVsock::reply_header(const Conn& c, uint16_t op) {
  Header h;
  h.src_cid = kHostCid;
  h.dst_cid = guest_cid_;
  h.src_port = c.key.local_port;
  h.dst_port = c.key.peer_port;
  h.type = kTypeStream;
  h.op = op;
  h.buf_alloc = c.buf_alloc;
  h.fwd_cnt = c.fwd_cnt;
  return h;
}

void VirtioVsock::process_rx() {
  if (!transport_->running() || reset_unacked_) return;
  const memory::GuestMemory& mem = transport_->memory();
  Virtqueue& q = transport_->queue(kRxQueue);
  DescChain chain;
  std::string why;
  bool any = false;
  // Connections put back on rx_queue_ without anything sent since the last progress: once
  // every queued connection has had a turn that way, the guest's buffers cannot carry what
  // waits (a buffer with room for a header only, while data waits), and going round again
  // would spin here for ever with the device mutex held.
  size_t stalled = 0;
  while (!rsts_.empty() || !rx_queue_.empty()) {
    auto r = q.pop(chain, why);
    if (r == Virtqueue::Pop::Empty) break;  // resumed by the guest's RX notification
    if (r == Virtqueue::Pop::Bad || chain.writable_bytes < kHeaderSize) {
      transport_->fail("virtio-vsock rx: " + (r == Virtqueue::Pop::Bad ? why : "buffer too small"));
      return;
    }
    uint32_t used = 0;
    if (!rsts_.empty()) {
      chain_write(mem, chain, 0, encode_header(rsts_.front()));
      rsts_.pop_front();
      used = kHeaderSize;
    } else {
      VsockKey key = rx_queue_.front();
      rx_queue_.pop_front();
      auto it = conns_.find(key);
      if (it != conns_.end()) {
        Conn& c = it->second;
        c.in_rx_queue = false;
        bool erase = false;
        used = fill_rx(c, chain, erase);
        if (erase) {
          erase_conn(key);
        } else {
          update_epoll(c);
          if (c.has_rx_work()) {
            schedule_rx(c);
            if (used == 0 && ++stalled > rx_queue_.size()) {
              q.undo_pop();
              if (any) transport_->signal_used(kRxQueue);
              transport_->fail("virtio-vsock rx: a receive buffer of " +
                               std::to_string(chain.writable_bytes) +
                               " bytes has no room for the data waiting");
              return;
            }
          }
        }
      }
    }
    if (used == 0) {
      q.undo_pop();
      continue;
    }
    stalled = 0;
    q.push_used(chain.head, used);
    any = true;
  }
  if (any) transport_->signal_used(kRxQueue);
}

uint32_t VirtioVsock::fill_rx(Conn& c, const DescChain& chain, bool& erase) {
  const memory::GuestMemory& mem = transport_->memory();
  if ((c.pending & ~Conn::kSendCreditUpdate) == 0 && c.host_readable && c.can_read_host()) {
    uint32_t n = read_host(c, chain);
    if (n > 0) {
      Header h = reply_header(c, kOpRw);
      h.len = n;
      chain_write(mem, chain, 0, encode_header(h));
      c.last_fwd_cnt_sent = c.fwd_cnt;
      c.pending &= ~Conn::kSendCreditUpdate;
      return static_cast<uint32_t>(kHeaderSize) + n;
    }
  }
  Header h;
  if (c.pending & Conn::kSendRst) {
    h = reply_header(c, kOpRst);
    erase = true;
  } else if (c.pending & Conn::kSendRequest) {
    h = reply_header(c, kOpRequest);
    c.pending &= ~Conn::kSendRequest;
  } else if (c.pending & Conn::kSendResponse) {
    h = reply_header(c, kOpResponse);
    c.pending &= ~Conn::kSendResponse;
  } else if (c.pending & Conn::kSendShutdown) {
    h = reply_header(c, kOpShutdown);
    h.flags = c.shutdown_flags;
    c.pending &= ~Conn::kSendShutdown;
  } else if (c.pending & Conn::kSendCreditUpdate) {
    h = reply_header(c, kOpCreditUpdate);
  } else {
    return 0;
  }
  c.pending &= ~Conn::kSendCreditUpdate;  // every packet carries fwd_cnt
  c.last_fwd_cnt_sent = c.fwd_cnt;
  chain_write(mem, chain, 0, encode_header(h));
  return kHeaderSize;
}

uint32_t VirtioVsock::read_host(Conn& c, const DescChain& chain) {
  uint64_t room =
      std::min<uint64_t>({chain.writable_bytes - kHeaderSize, kMaxPayload, c.peer_credit()});
  if (room == 0) return 0;
  auto iov = chain_iovecs(transport_->memory(), chain, true, kHeaderSize, room);
  ssize_t n = ::readv(c.sock.get(), iov.data(), static_cast<int>(iov.size()));
  if (n > 0) {
    c.rx_cnt += static_cast<uint32_t>(n);
    return static_cast<uint32_t>(n);
  }
  c.host_readable = false;
  if (n == 0) {
    c.host_eof = true;
    c.shutdown_flags |= kShutdownSend | (c.host_hup ? kShutdownRcv : 0);
    c.pending |= Conn::kSendShutdown;
    maybe_finish(c);
  } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    log::debug("virtio-vsock: host socket read failed: " + std::string(strerror(errno)));
    abort_conn(c);
  }
  return 0;
}

// ---- event queue ----

void VirtioVsock::process_event() {
  if (!event_pending_ || !transport_->running()) return;
  Virtqueue& q = transport_->queue(kEventQueue);
  DescChain chain;
  std::string why;
  auto r = q.pop(chain, why);
  if (r == Virtqueue::Pop::Empty) return;  // sent when the guest posts an event buffer
  if (r == Virtqueue::Pop::Bad || chain.writable_bytes < 4) {
    transport_->fail("virtio-vsock event: " +
                     (r == Virtqueue::Pop::Bad ? why : "buffer too small"));
    return;
  }
  uint32_t id = kEventTransportReset;
  chain_write(transport_->memory(), chain, 0, {reinterpret_cast<uint8_t*>(&id), 4});
  q.push_used(chain.head, 4);
  event_pending_ = false;
  reset_unacked_ = true;
  event_kicked_ = false;
  transport_->signal_used(kEventQueue);
}

}  // namespace space::devices
