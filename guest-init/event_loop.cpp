// Event loop: three fds, one poll() per wakeup, no allocation on the idle path.
#include "event_loop.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "channel.h"
#include "listener.h"
#include "poweroff.h"
#include "session.h"
#include "util/error.h"

namespace space::guest {

void start_session(Context& ctx, Fd conn) noexcept {
  if (ctx.sessions.load() >= ctx.max_sessions) {
    Channel(std::move(conn)).send_error("too many connections to guest-init");
    return;
  }
  ctx.sessions++;
  try {
    std::thread([&ctx, c = std::move(conn)]() mutable {
      serve_connection(std::move(c), ctx);
      ctx.sessions--;
    }).detach();
  } catch (const std::exception& e) {
    ctx.sessions--;
    ctx.console.log(std::string("cannot start a connection thread: ") + e.what());
  }
}

namespace {

// Reads every pending signal; returns true if one asks guest-init to stop. As PID 1 that is
// SIGTERM, SIGUSR1 or SIGUSR2 (busybox reboot, halt, poweroff); in test mode any but SIGCHLD.
bool drain_signals(Context& ctx, int signal_fd) {
  bool stop = false;
  signalfd_siginfo si[8];
  ssize_t n;
  while ((n = ::read(signal_fd, si, sizeof si)) > 0) {
    for (size_t i = 0; i < static_cast<size_t>(n) / sizeof si[0]; i++) {
      int sig = static_cast<int>(si[i].ssi_signo);
      if (sig == SIGCHLD) continue;
      if (!ctx.pid1 || sig == SIGTERM || sig == SIGUSR1 || sig == SIGUSR2) {
        ctx.console.log(std::string("got SIG") + sigabbrev_np(sig) +
                        (ctx.pid1 ? "; powering off" : "; stopping"));
        stop = true;
      }
    }
  }
  return stop;
}

}  // namespace

int run_event_loop(Context& ctx, Fd listener, Fd signal_fd) {
  Fd poweroff(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!poweroff) throw_errno("eventfd");
  const int efd = poweroff.get();
  ctx.request_poweroff = [efd] {
    uint64_t one = 1;
    ssize_t r = ::write(efd, &one, sizeof one);
    (void)r;
  };

  pollfd fds[3] = {{listener.get(), POLLIN, 0}, {signal_fd.get(), POLLIN, 0}, {efd, POLLIN, 0}};
  for (;;) {
    int n = ::poll(fds, 3, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      ctx.console.log(std::string("poll: ") + std::strerror(errno));
      ::poll(nullptr, 0, 100);  // do not spin on a persistent failure
      continue;
    }
    if (fds[1].revents) {
      bool stop = drain_signals(ctx, signal_fd.get());
      ctx.reaper.reap();
      if (stop && ctx.pid1) power_off(ctx, signal_fd.get());
      if (stop) return 0;
    }
    if (fds[2].revents) {
      if (ctx.pid1) power_off(ctx, signal_fd.get());
      ctx.console.log("poweroff requested; exiting (test mode)");
      return 0;
    }
    if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
      ctx.console.log("listening socket failed; serving no more connections");
      fds[0].fd = -1;
    } else if (fds[0].revents & POLLIN) {
      Fd conn = accept_connection(listener.get());
      if (conn) {
        start_session(ctx, std::move(conn));
      } else if (errno != EAGAIN && errno != ECONNABORTED) {
        ctx.console.log(std::string("accept: ") + std::strerror(errno));
        ::poll(nullptr, 0, 10);  // e.g. EMFILE: back off rather than spin
      }
    }
  }
}

}  // namespace space::guest
