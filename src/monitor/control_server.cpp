// Control socket server; see control_server.h.
#include "monitor/control_server.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"
#include "util/log.h"
#include "util/socket.h"

namespace space::monitor {
namespace {
constexpr size_t kMaxLine = 64 * 1024;
constexpr size_t kMaxClients = 16;
constexpr size_t kMaxFds = 512;  // a branch of 64 brings 7 each

// True when the peer has closed its end (no client half-closes: each waits for its reply).
bool caller_gone(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP)) != 0;
}
}  // namespace

ControlServer::ControlServer(EventLoop& loop, const std::string& path, Handler handler)
    : loop_(loop), path_(path), listen_(net::unix_listen(path)), handler_(std::move(handler)) {
  loop_.add(listen_.get(), EPOLLIN, [this](uint32_t) { on_accept(); });
}

ControlServer::ControlServer(EventLoop& loop, Fd listener, Handler handler)
    : loop_(loop), listen_(std::move(listener)), handler_(std::move(handler)) {
  if (::listen(listen_.get(), 16) != 0) throw_errno("control socket: listen");
  loop_.add(listen_.get(), EPOLLIN, [this](uint32_t) { on_accept(); });
}

ControlServer::~ControlServer() {
  for (auto& [fd, c] : clients_) loop_.remove(fd);
  loop_.remove(listen_.get());
  if (!path_.empty()) ::unlink(path_.c_str());
}

void ControlServer::on_accept() {
  for (;;) {
    Fd fd = acceptor_.accept(listen_.get(), SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (!fd) {
      if (errno != EAGAIN) warn_.warn(std::string("control accept: ") + std::strerror(errno));
      return;
    }
    int c = fd.get();
    if (!net::peer_root_or_self(c)) {
      warn_.warn("control: refusing a client of uid " + std::to_string(net::peer_uid(c)) +
                 ", pid " + std::to_string(net::peer_pid(c)) +
                 " (only root and this VMM may connect)");
      continue;
    }
    if (clients_.size() >= kMaxClients) {
      warn_.warn("control: too many clients, refusing one");
      continue;
    }
    loop_.add(c, EPOLLIN, [this, c](uint32_t) { on_client(c); });
    clients_[c] = Client{std::move(fd), {}};
  }
}

void ControlServer::close_client(int fd) {
  loop_.remove(fd);
  clients_.erase(fd);
}

void ControlServer::on_client(int fd) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  char buf[4096];
  ssize_t n = net::recv_with_fds(fd, buf, it->second.fds);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0 || it->second.fds.size() > kMaxFds) {
    if (n > 0) warn_.warn("control: too many descriptors with a request, dropping client");
    close_client(fd);
    return;
  }
  it->second.in.append(buf, static_cast<size_t>(n));
  if (caller_gone(fd)) {
    // The caller gave up (its timeout, a signal) before we read its request, as when this VMM
    // was stopped: carrying it out now would surprise whoever was told it failed.
    warn_.warn(
        "control: the caller closed its connection before its request was read; "
        "not carried out");
    close_client(fd);
    return;
  }
  size_t nl;
  while ((nl = it->second.in.find('\n')) != std::string::npos) {
    std::string line = it->second.in.substr(0, nl);
    it->second.in.erase(0, nl + 1);
    std::vector<Fd> fds = std::move(it->second.fds);
    it->second.fds.clear();
    std::string reply = handler_(line, fds);
    // Replies are small; a client that does not read them is dropped.
    if (::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(reply.size())) {
      close_client(fd);
      return;
    }
  }
  if (it->second.in.size() > kMaxLine) {
    warn_.warn("control: request line too long, dropping client");
    close_client(fd);
  }
}

}  // namespace space::monitor
