// Signals: guest-init handles none asynchronously. SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1 and
// SIGUSR2 are blocked in the main thread before any other thread starts (threads inherit the mask)
// and read from a signalfd in the event loop; SIGPIPE is blocked too, so that a write to a
// closed pipe is only EPIPE. As PID 1, SIGTERM, SIGUSR1 and SIGUSR2 (what
// busybox reboot, halt and poweroff send to init) power the guest off; SIGINT and SIGHUP are
// ignored. A process started by guest-init inherits the blocked mask across
// exec, so every child must call reset_signals_in_child() between fork and exec.
#pragma once
#include "util/fd.h"

namespace space::guest {

// Blocks the signals above and returns a non-blocking, close-on-exec signalfd for them.
// Call before starting threads. Throws space::Error on failure.
Fd block_signals();
// Unblocks every signal. Async-signal-safe: for a forked child before exec.
void reset_signals_in_child() noexcept;

}  // namespace space::guest
