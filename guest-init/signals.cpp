// block_signals / reset_signals_in_child: one sigprocmask and one signalfd, nothing else.
#include "signals.h"

#include <signal.h>
#include <sys/signalfd.h>

#include "util/error.h"

namespace space::guest {

Fd block_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2}) sigaddset(&set, s);
  sigset_t blocked = set;
  sigaddset(&blocked, SIGPIPE);  // a write to a closed pipe is EPIPE, never a signal
  if (::sigprocmask(SIG_BLOCK, &blocked, nullptr) != 0) throw_errno("sigprocmask");
  int fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) throw_errno("signalfd");
  return Fd(fd);
}

void reset_signals_in_child() noexcept {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace space::guest
