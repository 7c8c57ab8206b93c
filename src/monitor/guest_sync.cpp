// GuestSync; see guest_sync.h. The request ("CONNECT 1024\n" plus the Hello frame) is a few
// dozen bytes, so one non-blocking send() into a fresh Unix socket takes it whole; the reply
// ("OK <port>\n" plus a HelloReply frame) is read as it comes and only checked for its frame type.
#include "monitor/guest_sync.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agent/client.h"
#include "proto/agent.h"
#include "util/error.h"
#include "util/log.h"

namespace space::monitor {

GuestSync::GuestSync(EventLoop& loop, std::string vsock_uds, std::string sandbox_id,
                     uint32_t hello_flags)
    : loop_(loop), uds_(std::move(vsock_uds)), id_(std::move(sandbox_id)), flags_(hello_flags) {}

GuestSync::~GuestSync() {
  drop();
}

void GuestSync::drop() {
  if (conn_) loop_.remove(conn_.get());
  conn_.reset();
  in_.clear();
}

void GuestSync::kick() noexcept {
  try {
    drop();
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (uds_.size() >= sizeof addr.sun_path) fail("socket path too long: " + uds_);
    std::memcpy(addr.sun_path, uds_.data(), uds_.size());
    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) throw_errno("socket");
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      throw_errno("connect " + uds_);
    std::string req = "CONNECT " + std::to_string(proto::kAgentPort) + "\n";
    auto hello = proto::encode_frame(proto::Type::Hello, agent::make_hello(id_, flags_).encode());
    req.append(hello.begin(), hello.end());
    ssize_t n = ::send(fd.get(), req.data(), req.size(), MSG_NOSIGNAL);
    if (n != static_cast<ssize_t>(req.size())) throw_errno("send Hello");
    conn_ = std::move(fd);
    loop_.add(conn_.get(), EPOLLIN, [this](uint32_t) { on_readable(); });
  } catch (const std::exception& e) {
    log::debug(std::string("guest sync: ") + e.what());
    conn_.reset();
  }
}

void GuestSync::on_readable() {
  uint8_t buf[512];
  for (;;) {
    ssize_t n = ::recv(conn_.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      log::debug("guest sync: guest-init closed the connection before answering");
      drop();
      return;
    }
    in_.insert(in_.end(), buf, buf + n);
    // "OK <port>\n", then an 8-byte frame header {u32 length, u16 type, u16 0}.
    auto nl = std::find(in_.begin(), in_.end(), '\n');
    if (nl == in_.end()) continue;
    size_t hdr = static_cast<size_t>(nl - in_.begin()) + 1;
    if (in_.size() < hdr + proto::kHeaderSize) continue;
    uint16_t type;
    std::memcpy(&type, in_.data() + hdr + 4, 2);
    if (type == static_cast<uint16_t>(proto::Type::HelloReply)) {
      answered_++;
      log::debug("guest sync: guest-init took the new entropy, clock and id");
    } else {
      log::debug("guest sync: guest-init answered with frame type " + std::to_string(type));
    }
    drop();
    return;
  }
}

}  // namespace space::monitor
