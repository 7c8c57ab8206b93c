// power_off: the shutdown sequence; waits are poll()s on the signalfd so every SIGCHLD reaps.
#include "poweroff.h"

#include <poll.h>
#include <signal.h>
#include <sys/io.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace space::guest {
namespace {

int64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void drain(int signal_fd) {
  signalfd_siginfo si[8];
  while (::read(signal_fd, si, sizeof si) > 0) {
  }
}

// Reaps until no child is left or `ms` have passed; true when none is left.
bool wait_for_no_children(Context& ctx, int signal_fd, int ms) {
  const int64_t deadline = now_ms() + ms;
  for (;;) {
    if (ctx.reaper.reap().no_children) return true;
    int64_t left = deadline - now_ms();
    if (left <= 0) return false;
    pollfd p{signal_fd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left));
    drain(signal_fd);
  }
}

}  // namespace

void power_off(Context& ctx, int signal_fd) noexcept {
  ctx.console.log("powering off");
  ::poll(nullptr, 0, kAckFlushMs);
  ::sync();
  ::kill(-1, SIGTERM);
  if (!wait_for_no_children(ctx, signal_fd, kTermGraceMs)) {
    ctx.console.log("processes still running after SIGTERM; sending SIGKILL");
    ::kill(-1, SIGKILL);
    wait_for_no_children(ctx, signal_fd, kKillGraceMs);
  }
  ::sync();
  if (ctx.gvisor) ::_exit(0);  // PID 1's exit ends a gVisor sandbox; its root is an overlay
  if (::mount(nullptr, "/", nullptr, MS_REMOUNT | MS_RDONLY, nullptr) != 0)
    ctx.console.log(std::string("remount / read-only: ") + std::strerror(errno));
  ::reboot(RB_AUTOBOOT);
  ctx.console.log(std::string("reboot: ") + std::strerror(errno) + "; resetting through the i8042");
  if (::ioperm(0x64, 1, 1) == 0) ::outb(0xfe, 0x64);
  ctx.console.log("i8042 reset failed; idling");
  reap_forever();
}

void reap_forever() noexcept {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  for (;;) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    ::sigwaitinfo(&chld, nullptr);
  }
}

}  // namespace space::guest
