// NonBlockingEnd: fstat decides between reopen, MSG_DONTWAIT and plain I/O; see nonblocking.h.
#include "util/nonblocking.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <string>

namespace space::io {

NonBlockingEnd NonBlockingEnd::open(int fd, bool write) {
  NonBlockingEnd e;
  e.fd_ = fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return e;
  e.small_writes_ = !S_ISREG(st.st_mode);  // until it is reopened below
  if (S_ISSOCK(st.st_mode)) {
    e.socket_ = true;
    e.small_writes_ = false;
  } else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    int flags = (write ? O_WRONLY : O_RDONLY) | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    Fd re(::open(path.c_str(), flags));
    if (re) {
      e.fd_ = re.get();
      e.owned_ = std::move(re);
      e.small_writes_ = false;
    }
  }
  return e;
}

ssize_t NonBlockingEnd::read(void* buf, size_t len) const {
  return socket_ ? ::recv(fd_, buf, len, MSG_DONTWAIT) : ::read(fd_, buf, len);
}

ssize_t NonBlockingEnd::write(const void* buf, size_t len) const {
  if (small_writes_ && len > PIPE_BUF) len = PIPE_BUF;  // never blocks once poll said POLLOUT
  return socket_ ? ::send(fd_, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL) : ::write(fd_, buf, len);
}

}  // namespace space::io
