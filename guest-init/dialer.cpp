// Dialer: keeping idle agent connections at the gVisor monitor; see dialer.h.
#include "dialer.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "event_loop.h"

namespace space::guest {

Fd dial_unix(const std::string& path) noexcept {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path) {
    errno = ENAMETOOLONG;
    return Fd();
  }
  std::memcpy(a.sun_path, path.data(), path.size());
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return Fd();
  for (;;) {
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    if (errno != EINTR) return Fd();
  }
}

namespace {

// Waits until the host writes to `fd` (true) or closes it (false).
bool wait_for_host(int fd) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (!(p.revents & POLLIN)) return false;  // POLLHUP or POLLERR with nothing to read
    char b;
    ssize_t r = ::recv(fd, &b, 1, MSG_PEEK);
    return r == 1;
  }
}

void dial_loop(Context& ctx, std::string path, const std::atomic<bool>* stop) noexcept {
  int backoff_ms = 1;
  bool said = false;
  while (!stop || !stop->load()) {
    Fd conn = dial_unix(path);
    if (!conn) {
      if (!said) {
        ctx.console.log("agent: dial " + path + ": " + std::strerror(errno) + "; retrying");
        said = true;
      }
      ::poll(nullptr, 0, backoff_ms);
      backoff_ms = std::min(backoff_ms * 2, kDialBackoffMaxMs);
      continue;
    }
    backoff_ms = 1;
    said = false;
    if (!wait_for_host(conn.get())) continue;  // closed idle: dial again
    start_session(ctx, std::move(conn));
  }
}

}  // namespace

void start_dialers(Context& ctx, const std::string& path, int idle, const std::atomic<bool>* stop) {
  for (int i = 0; i < idle; i++) {
    try {
      std::thread(dial_loop, std::ref(ctx), path, stop).detach();
    } catch (const std::exception& e) {
      ctx.console.log(std::string("cannot start an agent dialler: ") + e.what());
    }
  }
}

}  // namespace space::guest
