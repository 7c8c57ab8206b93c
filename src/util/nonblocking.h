// Non-blocking I/O on the caller's stdin, stdout and stderr without touching their flags.
// O_NONBLOCK belongs to the open file description, which the caller's shell and every other
// process on the same terminal or pipe share: setting it would make *their* reads fail with
// EAGAIN, and a crash would leave it set. Instead a pipe, FIFO or terminal is reopened through
// /proc/self/fd/N, which gives a description of our own; a socket is used with MSG_DONTWAIT; a
// regular file is used as it is, since it does not block for long; anything else that cannot
// be reopened is written PIPE_BUF bytes at a time, which never blocks once poll() said POLLOUT.
#pragma once
#include <sys/types.h>

#include <cstddef>

#include "util/fd.h"

namespace space::io {

class NonBlockingEnd {
 public:
  NonBlockingEnd() = default;
  // A non-blocking view of `fd` for reading (`write` false) or writing.
  static NonBlockingEnd open(int fd, bool write);
  // The fd to poll; -1 if none.
  int fd() const { return fd_; }
  // read()/write() that do not block (-1 with EAGAIN instead), except for a plain fd as above.
  ssize_t read(void* buf, size_t len) const;
  ssize_t write(const void* buf, size_t len) const;

 private:
  int fd_ = -1;
  Fd owned_;  // the reopened description, if any
  bool socket_ = false;
  bool small_writes_ = false;
};

}  // namespace space::io
