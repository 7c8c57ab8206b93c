// Unix sockets with deadlines; see socket.h.
#include "util/socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace space::net {

Deadline Deadline::after_ms(int64_t ms) {
  Deadline d;
  d.end_ = Clock::now() + std::chrono::milliseconds(ms < 0 ? 0 : ms);
  return d;
}

int Deadline::remaining_ms() const {
  if (!end_) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*end_ - Clock::now()).count();
  if (left <= 0) return 0;
  return left > INT_MAX ? INT_MAX : static_cast<int>(left);
}

Deadline& Deadline::cancel_on(int fd) {
  if (ncancel_ == cancel_.size()) fail("Deadline: too many cancel fds");
  cancel_[ncancel_++] = fd;
  return *this;
}

void wait_ready(int fd, short events, const Deadline& dl, const std::string& what) {
  std::array<pollfd, 5> p{};
  p[0] = {fd, events, 0};
  auto cancel = dl.cancel_fds();
  for (size_t i = 0; i < cancel.size(); i++) p[i + 1] = {cancel[i], POLLIN, 0};
  nfds_t n = static_cast<nfds_t>(cancel.size() + 1);
  for (;;) {
    int r = ::poll(p.data(), n, dl.remaining_ms());
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_errno("poll (" + what + ")");
    }
    if (r == 0) throw_errno(what, ETIMEDOUT);
    for (size_t i = 1; i < n; i++)
      if (p[i].revents) throw Cancelled(what, p[i].fd);
    if (p[0].revents) return;
  }
}

void sleep_ms(int ms, const Deadline& dl) {
  auto until = Deadline::after_ms(ms);
  std::array<pollfd, 4> p{};
  auto cancel = dl.cancel_fds();
  for (size_t i = 0; i < cancel.size(); i++) p[i] = {cancel[i], POLLIN, 0};
  for (;;) {
    int left = until.remaining_ms();
    int dl_left = dl.remaining_ms();
    if (dl_left >= 0 && dl_left < left) left = dl_left;
    int r = ::poll(p.data(), static_cast<nfds_t>(cancel.size()), left);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_errno("poll (sleep)");
    }
    if (r == 0) return;
    for (size_t i = 0; i < cancel.size(); i++)
      if (p[i].revents) throw Cancelled("sleep", p[i].fd);
  }
}

Fd unix_connect(const std::string& path, const Deadline& dl) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path)
    fail("connect " + path + ": socket path longer than " +
             std::to_string(sizeof addr.sun_path - 1) + " bytes",
         "set SPACE_RUN_DIR to a shorter directory");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  for (;;) {
    Fd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s) throw_errno("socket");
    if (::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return s;
    int err = errno;
    if (err == EINPROGRESS) {
      wait_ready(s.get(), POLLOUT, dl, "connect " + path);
      int soerr = 0;
      socklen_t len = sizeof soerr;
      if (::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) throw_errno("getsockopt");
      if (soerr == 0) return s;
      throw_errno("connect " + path, soerr);
    }
    // EAGAIN: the listener's backlog is full; retry shortly.
    if (err != EAGAIN && err != EINTR) throw_errno("connect " + path, err);
    if (dl.expired()) throw_errno("connect " + path, ETIMEDOUT);
    ::usleep(10'000);
  }
}

void send_all(int fd, std::string_view data, const Deadline& dl) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n >= 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) throw_errno("send");
    wait_ready(fd, POLLOUT, dl, "send");
  }
}

bool recv_exact(int fd, void* buf, size_t len, const Deadline& dl) {
  auto* p = static_cast<char*>(buf);
  size_t got = 0;
  while (got < len) {
    ssize_t n = ::read(fd, p + got, len - got);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      if (got == 0) return false;
      fail("receive: connection closed after " + std::to_string(got) + " of " +
           std::to_string(len) + " bytes");
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) throw_errno("receive");
    wait_ready(fd, POLLIN, dl, "receive");
  }
  return true;
}

std::optional<std::string> read_line(int fd, const Deadline& dl, size_t max_len) {
  std::string line;
  bool peekable = true;
  for (;;) {
    if (peekable) {
      // Peek at what has arrived, then take it up to and including the first newline.
      char buf[4096];
      ssize_t n = ::recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
      if (n > 0) {
        const char* nl = static_cast<const char*>(std::memchr(buf, '\n', static_cast<size_t>(n)));
        size_t take = nl ? static_cast<size_t>(nl - buf) + 1 : static_cast<size_t>(n);
        ssize_t got = ::recv(fd, buf, take, 0);
        if (got < 0) throw_errno("receive");
        size_t data = static_cast<size_t>(got) - (nl && static_cast<size_t>(got) == take ? 1 : 0);
        if (line.size() + data > max_len)
          fail("receive: line longer than " + std::to_string(max_len) + " bytes");
        line.append(buf, data);
        if (nl && static_cast<size_t>(got) == take) return line;
        continue;
      }
      if (n < 0 && errno == ENOTSOCK) {
        peekable = false;
        continue;
      }
      if (n == 0) {
        if (line.empty()) return std::nullopt;
        fail("receive: connection closed in the middle of a line");
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) throw_errno("receive");
      wait_ready(fd, POLLIN, dl, "receive");
      continue;
    }
    char c;
    ssize_t n = ::read(fd, &c, 1);
    if (n == 1) {
      if (c == '\n') return line;
      if (line.size() >= max_len)
        fail("receive: line longer than " + std::to_string(max_len) + " bytes");
      line += c;
      continue;
    }
    if (n == 0) {
      if (line.empty()) return std::nullopt;
      fail("receive: connection closed in the middle of a line");
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) throw_errno("receive");
    wait_ready(fd, POLLIN, dl, "receive");
  }
}

Fd unix_bind(const std::string& path, const SocketAccess& access) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path)
    fail("socket path too long (" + std::to_string(path.size()) + " bytes): " + path,
         "use a shorter --root or $SPACE_RUN_DIR");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) throw_errno("socket(AF_UNIX)");
  ::unlink(path.c_str());
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw_errno("bind " + path);
  if (::chmod(path.c_str(), access.mode) != 0) throw_errno("chmod " + path);
  if ((access.uid != static_cast<uid_t>(-1) || access.gid != static_cast<gid_t>(-1)) &&
      ::lchown(path.c_str(), access.uid, access.gid) != 0)
    throw_errno("chown " + path);
  return fd;
}

Fd unix_listen(const std::string& path, int backlog, const SocketAccess& access) {
  Fd fd = unix_bind(path, access);
  if (::listen(fd.get(), backlog) != 0) throw_errno("listen " + path);
  return fd;
}

Listener listen_at(const std::string& path, int backlog, const SocketAccess& access) {
  Listener l;
  l.fd = unix_listen(path, backlog, access);
  l.ino = inode_of(path);
  return l;
}

ino_t inode_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

void unlink_if_ours(const std::string& path, const Listener& l) {
  if (l.ino && inode_of(path) == l.ino) ::unlink(path.c_str());
}

long peer_pid(int fd) {
  ucred cr{};
  socklen_t len = sizeof cr;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || cr.pid <= 0) return -1;
  return static_cast<long>(cr.pid);
}

void send_with_fds(int fd, std::string_view data, std::span<const int> fds, const Deadline& dl) {
  constexpr size_t kPerMessage = 250;  // the kernel takes at most SCM_MAX_FD (253) at once
  size_t pieces = (fds.size() + kPerMessage - 1) / kPerMessage;
  if (pieces > data.size()) fail("send: more descriptors than bytes to carry them");
  size_t sent = 0, fd_i = 0;
  while (fd_i < fds.size()) {
    size_t n = std::min(kPerMessage, fds.size() - fd_i);
    // The last piece carries the rest of the data, the others one byte each.
    size_t len = fd_i + n == fds.size() ? data.size() - sent : 1;
    std::vector<char> ctl(CMSG_SPACE(n * sizeof(int)));
    iovec iov{const_cast<char*>(data.data() + sent), len};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.data();
    msg.msg_controllen = ctl.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(n * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data() + fd_i, n * sizeof(int));
    for (;;) {
      ssize_t r = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
      if (r > 0) {
        sent += static_cast<size_t>(r);
        break;
      }
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && errno == EAGAIN) {
        wait_ready(fd, POLLOUT, dl, "send");
        continue;
      }
      throw_errno("sendmsg with descriptors");
    }
    fd_i += n;
  }
  if (sent < data.size()) send_all(fd, data.substr(sent), dl);
}

ssize_t recv_with_fds(int fd, std::span<char> buf, std::vector<Fd>& fds) {
  alignas(cmsghdr) char ctl[CMSG_SPACE(253 * sizeof(int))];
  iovec iov{buf.data(), buf.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctl;
  msg.msg_controllen = sizeof ctl;
  ssize_t n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  if (n < 0) return n;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; i++) {
      int got;
      std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds.emplace_back(got);
    }
  }
  return n;
}

long peer_uid(int fd) {
  ucred cr{};
  socklen_t len = sizeof cr;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) return -1;
  return static_cast<long>(cr.uid);
}

bool peer_root_or_self(int fd) {
  ucred cr{};
  socklen_t len = sizeof cr;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) return false;
  return cr.uid == 0 || (cr.uid == ::geteuid() && cr.pid == ::getpid());
}

bool peer_trusted(int fd) {
  long uid = peer_uid(fd);
  return uid == 0 || (uid >= 0 && static_cast<uid_t>(uid) == ::geteuid());
}

}  // namespace space::net
