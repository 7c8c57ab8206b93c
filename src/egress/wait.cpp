// The broker's wait on a socket; see wait.h.
#include "egress/wait.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

#include "util/timing.h"

namespace space::egress {

Wait wait_for(int fd, short events, int64_t deadline, int stop_fd) {
  for (;;) {
    int left = int(std::max<int64_t>(deadline - timing::mono_ms(), 0));
    pollfd p[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
    int n = ::poll(p, stop_fd >= 0 ? 2 : 1, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Wait::Timeout;
    if (stop_fd >= 0 && p[1].revents) return Wait::Stopped;
    if (n == 0) return Wait::Timeout;
    return Wait::Ready;
  }
}

}  // namespace space::egress
