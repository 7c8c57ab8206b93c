// VirtioVsock, host-facing half: the listening socket and the CONNECT handshake, guest->host
// connects to "<uds_path>_<port>", host socket events, writes to the host with the bounded
// to_host buffer, and the connection lifecycle (half-closes, RST, teardown). Every fd here is
// non-blocking and owned by an Fd; every EventLoop handler takes the device mutex first and
// looks its connection up by key, so a handler for a connection that is gone does nothing.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "devices/virtio/vsock.h"
#include "util/error.h"
#include "util/log.h"
#include "util/socket.h"

namespace space::devices {

using namespace vsock;

namespace {
// Fills `addr` for `path`; false if the path does not fit sun_path.
bool make_addr(const std::string& path, sockaddr_un& addr) {
  addr = {};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, path.data(), path.size());
  return true;
}
bool would_block(int err) {
  return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}
}  // namespace

// Binds `path` (replacing a stale socket there), mode 0600: only root and our uid may connect,
// and that is a shell in the guest.
Fd VirtioVsock::bind_listener(const std::string& path) {
  sockaddr_un addr;
  if (!make_addr(path, addr))
    fail("virtio-vsock: socket path '" + path + "' is empty or too long for sun_path",
         "use a shorter run directory");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) fail("virtio-vsock: " + path + " exists and is not a socket");
    ::unlink(path.c_str());  // a stale socket from an earlier run
  }
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) throw_errno("virtio-vsock: socket");
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw_errno("virtio-vsock: bind " + path);
  // Set before listen(), so no client can connect in between.
  if (::chmod(path.c_str(), 0600) != 0) throw_errno("virtio-vsock: chmod " + path);
  return fd;
}

VirtioVsock::VirtioVsock(EventLoop& loop, uint64_t guest_cid, std::string uds_path,
                         std::map<uint32_t, VsockHostRoute> routes)
    : VirtioVsock(loop, guest_cid, bind_listener(uds_path), uds_path, std::move(routes)) {
  owns_path_ = true;
}

VirtioVsock::VirtioVsock(EventLoop& loop, uint64_t guest_cid, Fd listener, std::string uds_path,
                         std::map<uint32_t, VsockHostRoute> routes)
    : loop_(loop),
      guest_cid_(guest_cid),
      uds_path_(std::move(uds_path)),
      routes_(std::move(routes)),
      listener_(std::move(listener)) {
  if (guest_cid_ < 3 || guest_cid_ >= 0xffffffffULL)
    fail("virtio-vsock: guest cid " + std::to_string(guest_cid_) + " is not in 3..4294967294");
  sockaddr_un addr;
  if (!make_addr(uds_path_ + "_4294967295", addr))
    fail("virtio-vsock: socket path '" + uds_path_ + "' is empty or too long for sun_path",
         "use a shorter run directory");
  if (!listener_) fail("virtio-vsock: no listening socket");
  if (::listen(listener_.get(), 128) != 0) throw_errno("virtio-vsock: listen " + uds_path_);
  kick_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!kick_) throw_errno("virtio-vsock: eventfd");
}

VirtioVsock::~VirtioVsock() {
  detach_all();
  bury_dead();
  if (attached_) {
    loop_.remove(listener_.get());
    loop_.remove(kick_.get());
  }
  if (owns_path_) ::unlink(uds_path_.c_str());
}

void VirtioVsock::attach(VirtioTransport& transport) {
  VirtioBackend::attach(transport);
  if (attached_) return;
  loop_.add(listener_.get(), EPOLLIN, [this](uint32_t) { on_listener(); });
  loop_.add(kick_.get(), EPOLLIN, [this](uint32_t) { on_kick(); });
  attached_ = true;
}

// ---- host -> guest: listener and handshake ----

void VirtioVsock::on_listener() {
  std::lock_guard lk(transport_->device_mutex());
  for (;;) {
    Fd s = acceptor_.accept(listener_.get(), SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (!s) {
      if (!would_block(errno)) warn_.warn("virtio-vsock: accept: " + std::string(strerror(errno)));
      return;
    }
    if (!net::peer_root_or_self(s.get())) {
      warn_.warn("virtio-vsock: refusing a client of uid " +
                 std::to_string(net::peer_uid(s.get())) + ", pid " +
                 std::to_string(net::peer_pid(s.get())) + " (only root and this VMM may connect)");
      continue;
    }
    if (handshakes_.size() >= kMaxHandshakes) {
      warn_.warn("virtio-vsock: too many pending CONNECT handshakes; dropping a client");
      continue;  // `s` closes
    }
    uint64_t id = next_handshake_id_++;
    int fd = s.get();
    handshakes_[id] = Handshake{std::move(s), {}};
    loop_.add(fd, EPOLLIN, [this, id](uint32_t) { on_handshake(id); });
  }
}

void VirtioVsock::on_handshake(uint64_t id) {
  std::lock_guard lk(transport_->device_mutex());
  auto it = handshakes_.find(id);
  if (it == handshakes_.end()) return;
  Handshake& hs = it->second;
  auto drop = [&] {
    loop_.remove(hs.sock.get());
    handshakes_.erase(it);
  };
  // Peek, then consume no further than the '\n': bytes after it belong to the stream.
  char buf[kMaxConnectLine];
  ssize_t n = ::recv(hs.sock.get(), buf, kMaxConnectLine - hs.line.size(), MSG_PEEK);
  if (n < 0 && would_block(errno)) return;
  if (n <= 0) return drop();
  auto* nl = static_cast<char*>(std::memchr(buf, '\n', static_cast<size_t>(n)));
  size_t take = nl ? static_cast<size_t>(nl - buf) + 1 : static_cast<size_t>(n);
  if (::recv(hs.sock.get(), buf, take, 0) != static_cast<ssize_t>(take)) return drop();
  hs.line.append(buf, nl ? take - 1 : take);
  if (!nl) {
    if (hs.line.size() >= kMaxConnectLine) {
      warn_.warn("virtio-vsock: CONNECT line too long; closing the client");
      drop();
    }
    return;
  }
  auto port = parse_connect_line(hs.line);
  if (!port) warn_.warn("virtio-vsock: malformed CONNECT line; closing the client");
  Fd client = std::move(hs.sock);
  loop_.remove(client.get());
  handshakes_.erase(it);
  if (!port) return;
  start_host_initiated(std::move(client), *port);
  process_rx();
}

void VirtioVsock::start_host_initiated(Fd client, uint32_t guest_port) {
  if (conns_.size() >= kMaxConnections) {
    warn_.warn("virtio-vsock: connection limit reached; closing the client");
    return;
  }
  host_connections_++;
  // A fresh host port: no live connection may use it as its local port.
  for (uint32_t tries = 0;; tries++) {
    uint32_t p = next_ephemeral_++;
    if (next_ephemeral_ == 0xffffffffu) next_ephemeral_ = kFirstEphemeralPort;
    auto it = conns_.lower_bound({p, 0});
    if (it == conns_.end() || it->first.local_port != p) {
      Conn* c = add_conn({p, guest_port}, std::move(client), Conn::State::Connecting);
      if (c) {
        c->pending = Conn::kSendRequest;
        schedule_rx(*c);
      }
      return;
    }
    if (tries > kMaxConnections) return;  // unreachable while conns_ is bounded
  }
}

// ---- guest -> host ----

void VirtioVsock::connect_to_host(const Header& h) {
  if (conns_.size() >= kMaxConnections) {
    warn_.warn("virtio-vsock: connection limit reached; refusing a guest connection");
    return queue_rst(h);
  }
  auto route = routes_.find(h.dst_port);
  std::string path =
      route != routes_.end() ? route->second.path : uds_path_ + "_" + std::to_string(h.dst_port);
  sockaddr_un addr;
  if (!make_addr(path, addr)) return queue_rst(h);
  auto dial = [&]() -> Fd {
    Fd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (s && ::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return s;
    return Fd();
  };
  Fd s = dial();
  if (!s) {
    log::debug("virtio-vsock: guest connect to host port " + std::to_string(h.dst_port) +
               " refused: " + strerror(errno));
    return queue_rst(h);
  }
  Conn* c = add_conn({h.dst_port, h.src_port}, std::move(s), Conn::State::Established);
  if (!c) return queue_rst(h);
  guest_connections_++;
  c->peer_buf_alloc = h.buf_alloc;
  c->peer_fwd_cnt = h.fwd_cnt;
  c->pending = Conn::kSendResponse;
  update_epoll(*c);
  schedule_rx(*c);
}

// ---- connection plumbing ----

VsockConnection* VirtioVsock::add_conn(VsockKey key, Fd sock, Conn::State state) {
  int fd = sock.get();
  Conn& c = conns_[key];
  c.key = key;
  c.id = next_conn_id_++;
  c.state = state;
  c.sock = std::move(sock);
  c.buf_alloc = kBufAlloc;
  try {
    loop_.add(fd, 0, [this, key, id = c.id](uint32_t ev) { on_conn_event(key, id, ev); });
  } catch (const Error& e) {
    warn_.warn(std::string("virtio-vsock: ") + e.what());
    conns_.erase(key);
    return nullptr;
  }
  c.registered = true;
  return &c;
}

void VirtioVsock::on_conn_event(VsockKey key, uint64_t id, uint32_t events) {
  std::lock_guard lk(transport_->device_mutex());
  auto it = conns_.find(key);
  if (it == conns_.end() || it->second.id != id) return;  // detached; bury_dead() is due
  Conn& c = it->second;
  if (events & (EPOLLHUP | EPOLLERR)) {
    // The host peer is gone. epoll reports this whatever the mask, so stop watching the fd.
    c.host_hup = true;
    if (c.registered) loop_.remove(c.sock.get());
    c.registered = false;
    c.epoll_mask = 0;
    if (c.state != Conn::State::Established || !c.to_host.empty() || (events & EPOLLERR)) {
      abort_conn(c);
    } else if (c.host_eof) {
      c.shutdown_flags |= kShutdownRcv | kShutdownSend;
      c.pending |= Conn::kSendShutdown;
    } else {
      c.host_readable = true;  // read what is left, then EOF turns into SHUTDOWN
    }
  } else {
    if (events & EPOLLIN) c.host_readable = true;
    if ((events & EPOLLOUT) && !flush_to_host(c)) abort_conn(c);
  }
  it = conns_.find(key);
  if (it != conns_.end()) {
    update_epoll(it->second);
    if (it->second.has_rx_work()) schedule_rx(it->second);
  }
  process_rx();
}

void VirtioVsock::schedule_rx(Conn& c) {
  if (c.in_rx_queue) return;
  c.in_rx_queue = true;
  rx_queue_.push_back(c.key);
}

void VirtioVsock::update_epoll(Conn& c) {
  if (!c.registered) return;
  uint32_t m = 0;
  if (c.can_read_host() && !c.host_readable) m |= EPOLLIN;
  if (!c.to_host.empty()) m |= EPOLLOUT;
  if (m == c.epoll_mask) return;
  loop_.modify(c.sock.get(), m);
  c.epoll_mask = m;
}

void VirtioVsock::send_to_host(Conn& c, const DescChain& chain, uint32_t len) {
  const memory::GuestMemory& mem = transport_->memory();
  size_t sent = 0;
  if (c.to_host.empty() && len > 0) {
    auto iov = chain_iovecs(mem, chain, false, kHeaderSize, len);
    msghdr m{};
    m.msg_iov = iov.data();
    m.msg_iovlen = iov.size();
    ssize_t n = ::sendmsg(c.sock.get(), &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && !would_block(errno)) return abort_conn(c);
    sent = n > 0 ? static_cast<size_t>(n) : 0;
    c.fwd_cnt += static_cast<uint32_t>(sent);
  }
  if (sent < len)
    chain_read(mem, chain, kHeaderSize + sent, {c.to_host.append(len - sent), len - sent});
  maybe_credit_update(c);
}

bool VirtioVsock::flush_to_host(Conn& c) {
  while (!c.to_host.empty()) {
    auto f = c.to_host.front();
    ssize_t n = ::send(c.sock.get(), f.data(), f.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (would_block(errno)) break;
      return false;
    }
    c.to_host.consume(static_cast<size_t>(n));
    c.fwd_cnt += static_cast<uint32_t>(n);
  }
  maybe_credit_update(c);
  maybe_finish(c);
  return true;
}

void VirtioVsock::maybe_credit_update(Conn& c) {
  // The guest may be waiting for credit: tell it once half the buffer has been freed.
  if (c.fwd_cnt - c.last_fwd_cnt_sent >= c.buf_alloc / 2) c.pending |= Conn::kSendCreditUpdate;
}

void VirtioVsock::maybe_finish(Conn& c) {
  if (c.state != Conn::State::Established || !c.sock || !c.to_host.empty()) return;
  if (c.guest_shut_send && !c.host_shut_wr) {
    ::shutdown(c.sock.get(), SHUT_WR);  // half-close: the host client reads EOF
    c.host_shut_wr = true;
  }
  bool done = c.guest_shut_send && (c.guest_shut_rcv || c.host_eof);
  if (!done) return;
  close_host(c);  // nothing more can flow either way: close, and RST tells the guest
  c.state = Conn::State::Closing;
  c.pending = Conn::kSendRst;
  schedule_rx(c);
}

void VirtioVsock::close_host(Conn& c) {
  if (c.registered) loop_.remove(c.sock.get());
  c.registered = false;
  c.epoll_mask = 0;
  c.sock.reset();
  c.host_readable = false;
}

void VirtioVsock::abort_conn(Conn& c) {
  if (c.state == Conn::State::Connecting && (c.pending & Conn::kSendRequest))
    return erase_conn(c.key);  // the guest never heard of it
  close_host(c);
  c.to_host.clear();
  c.state = Conn::State::Closing;
  c.pending = Conn::kSendRst;
  schedule_rx(c);
}

void VirtioVsock::erase_conn(VsockKey key) {
  auto it = conns_.find(key);
  if (it == conns_.end()) return;
  close_host(it->second);
  if (it->second.in_rx_queue) std::erase(rx_queue_, key);
  conns_.erase(it);
}

void VirtioVsock::detach_all() {
  for (auto& [key, c] : conns_)
    if (c.registered) dead_fds_.push_back(std::move(c.sock));
  conns_.clear();
  for (auto& [id, hs] : handshakes_) dead_fds_.push_back(std::move(hs.sock));
  handshakes_.clear();
  rx_queue_.clear();
  if (!dead_fds_.empty()) notify(kRxQueue);  // wake the loop thread to bury them
}

void VirtioVsock::bury_dead() {
  for (auto& fd : dead_fds_) loop_.remove(fd.get());
  dead_fds_.clear();
}

}  // namespace space::devices
