// SandboxSockets; see sandbox_sockets.h.
#include "util/sandbox_sockets.h"

#include <sys/epoll.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace space {

SandboxSockets::SandboxSockets(EventLoop& loop, PathOf path_of, int backlog, OnConn on_conn)
    : loop_(loop), path_of_(std::move(path_of)), backlog_(backlog), on_conn_(std::move(on_conn)) {}

SandboxSockets::~SandboxSockets() {
  for (auto& [id, l] : listeners_) {
    loop_.remove(l.fd.get());
    net::unlink_if_ours(path_of_(id), l);
  }
}

void SandboxSockets::sync(const std::map<std::string, gid_t>& want) {
  for (auto it = listeners_.begin(); it != listeners_.end();) {
    const std::string path = path_of_(it->first);
    if (want.count(it->first) && net::inode_of(path) == it->second.ino) {
      ++it;
      continue;
    }
    loop_.remove(it->second.fd.get());
    net::unlink_if_ours(path, it->second);
    it = listeners_.erase(it);
  }
  for (const auto& [id, gid] : want) {
    if (listeners_.count(id)) continue;
    try {
      net::Listener l = net::listen_at(path_of_(id), backlog_, {0660, static_cast<uid_t>(-1), gid});
      const int fd = l.fd.get();
      loop_.add(fd, EPOLLIN, [this, fd, id = id](uint32_t) { accept_pending(fd, id); });
      listeners_.emplace(id, std::move(l));
      log::debug("listening for sandbox " + id);
    } catch (const Error& e) {
      log::warn("sandbox " + id + ": " + e.what());
    }
  }
}

void SandboxSockets::accept_pending(int listener, const std::string& id) {
  for (;;) {
    Fd c = acceptor_.accept(listener, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (!c) {
      if (errno == EMFILE)
        warn_.warn("out of file descriptors: a client was turned away (" +
                   std::to_string(acceptor_.turned_away()) + " so far)");
      else if (errno != EAGAIN)
        warn_.warn(std::string("accept: ") + std::strerror(errno));
      return;
    }
    ucred cr{};
    socklen_t len = sizeof cr;
    if (::getsockopt(c.get(), SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) {
      warn_.warn(std::string("SO_PEERCRED: ") + std::strerror(errno));
      continue;
    }
    on_conn_(std::move(c), id, cr);
  }
}

std::optional<gid_t> directory_group(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  return st.st_gid;
}

}  // namespace space
