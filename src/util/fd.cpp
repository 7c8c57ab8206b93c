// Implementation of Fd and the few blocking I/O helpers built on it.
#include "util/fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "util/error.h"

namespace space {

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Pipe Pipe::make() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw_errno("pipe2");
  return Pipe{Fd(p[0]), Fd(p[1])};
}

void set_nonblocking(int fd, bool on) {
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0) throw_errno("fcntl(F_GETFL)");
  fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
  if (::fcntl(fd, F_SETFL, fl) < 0) throw_errno("fcntl(F_SETFL)");
}

void write_all(int fd, const void* buf, size_t len) {
  auto* p = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = ::write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("write");
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
}

size_t read_full(int fd, void* buf, size_t len) {
  auto* p = static_cast<char*>(buf);
  size_t got = 0;
  while (got < len) {
    ssize_t n = ::read(fd, p + got, len - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("read");
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

bool close_all_but(int* keep, size_t n) {
  std::sort(keep, keep + n);
  unsigned next = 0;  // the lowest fd not yet dealt with
  bool ok = true;
  for (size_t i = 0; i < n; i++) {
    if (keep[i] < 0 || static_cast<unsigned>(keep[i]) < next) continue;
    if (static_cast<unsigned>(keep[i]) > next)
      ok = ::close_range(next, static_cast<unsigned>(keep[i]) - 1, 0) == 0 && ok;
    next = static_cast<unsigned>(keep[i]) + 1;
  }
  return ::close_range(next, ~0U, 0) == 0 && ok;
}

}  // namespace space
