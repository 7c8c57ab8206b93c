// The main thread's loop: poll() over the listening socket, the signalfd and a poweroff eventfd.
// It accepts connections (each gets a detached thread running serve_connection), reaps children
// on SIGCHLD, and powers off when a session asks. It does nothing on a timer, so an idle guest
// costs no wakeups.
#pragma once
#include "context.h"
#include "util/fd.h"

namespace space::guest {

// Runs until a poweroff is requested (by a session, or by SIGTERM/SIGUSR1/SIGUSR2). As PID 1
// that powers the guest off and never returns; in test mode it returns the exit code (0).
// `listener` may be invalid (then only reaping happens). Sets ctx.request_poweroff.
// Throws only on setup failure.
int run_event_loop(Context& ctx, Fd listener, Fd signal_fd);
// Serves `conn` on a detached session thread (serve_connection), or refuses it with an Error
// frame when ctx.max_sessions are open. Never throws.
void start_session(Context& ctx, Fd conn) noexcept;

}  // namespace space::guest
