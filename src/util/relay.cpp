// Two-way byte relay; see relay.h.
#include "util/relay.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <vector>

#include "util/fd.h"

namespace space {

namespace {

constexpr size_t kChunk = 64 * 1024;

// One direction: bytes read from `from` wait in `buf` until `to` takes them.
struct Direction {
  int from, to;
  std::vector<uint8_t> buf = std::vector<uint8_t>(kChunk);
  size_t len = 0, off = 0;
  bool eof = false;  // `from` sent everything; `to` was shut down for writing
  uint64_t moved = 0;
  bool done() const { return eof && len == 0; }

  // Reads when empty and `from` polled ready, then writes what it holds. False on an error.
  bool pump(short from_events) {
    if (len == 0 && !eof && (from_events & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t n = ::recv(from, buf.data(), buf.size(), MSG_DONTWAIT);
      if (n > 0) {
        len = size_t(n);
        off = 0;
      } else if (n == 0) {
        eof = true;
        ::shutdown(to, SHUT_WR);
      } else if (errno != EAGAIN && errno != EINTR) {
        return false;
      }
    }
    if (len > 0) {  // just read, or `to` may have room: EAGAIN costs one syscall
      ssize_t n = ::send(to, buf.data() + off, len, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        off += size_t(n);
        len -= size_t(n);
        moved += uint64_t(n);
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return false;
      }
    }
    return true;
  }
};

}  // namespace

RelayResult relay(int a, int b, int idle_ms, int stop_fd) {
  set_nonblocking(a);
  set_nonblocking(b);
  Direction up{a, b}, down{b, a};
  RelayResult r;
  while (!(up.done() && down.done())) {
    short aev = short((up.len == 0 && !up.eof ? POLLIN : 0) | (down.len ? POLLOUT : 0));
    short bev = short((down.len == 0 && !down.eof ? POLLIN : 0) | (up.len ? POLLOUT : 0));
    // A side with nothing to wait for is left out, so a hang-up there cannot spin the loop.
    pollfd p[3] = {{aev ? a : -1, aev, 0}, {bev ? b : -1, bev, 0}, {stop_fd, POLLIN, 0}};
    int n = ::poll(p, stop_fd >= 0 ? 3 : 2, idle_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      r.ended = "idle for " + std::to_string(idle_ms / 1000) + " s";
      break;
    }
    if (n < 0 || (stop_fd >= 0 && p[2].revents)) {
      r.ended = "stopped";
      break;
    }
    if (!up.pump(p[0].revents) || !down.pump(p[1].revents)) {
      r.ended = "connection reset";
      break;
    }
  }
  r.a_to_b = up.moved;
  r.b_to_a = down.moved;
  return r;
}

}  // namespace space
