// Accepting without spinning when out of descriptors; see acceptor.h.
#include "util/acceptor.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "util/error.h"

namespace space {
namespace {
// The spare: an eventfd needs no path, so it works in an empty mount namespace too.
Fd open_spare() {
  return Fd(::eventfd(0, EFD_CLOEXEC));
}
}  // namespace

Acceptor::Acceptor() : spare_(open_spare()) {
  if (!spare_) throw_errno("eventfd (an accept spare)");
}

Fd Acceptor::accept(int listener, int flags) {
  for (;;) {
    int c = ::accept4(listener, nullptr, nullptr, flags);
    if (c >= 0) return Fd(c);
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if ((errno != EMFILE && errno != ENFILE) || !spare_) return Fd();
    spare_.reset();
    int away = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (away >= 0) {
      ::close(away);
      turned_away_++;
    }
    spare_ = open_spare();
    errno = EMFILE;
    return Fd();
  }
}

}  // namespace space
