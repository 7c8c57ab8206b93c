// The broker's one wait on a connection's socket: until it polls ready for the events asked, a
// deadline (timing::mono_ms) passes, or the broker's stop fd becomes readable. Used by a
// connection's set-up (egress/connection.h) and by a TLS interception's handshakes
// (egress/intercept.h).
#pragma once
#include <cstdint>

namespace space::egress {

enum class Wait { Ready, Timeout, Stopped };

// Waits on `fd` for `events` until `deadline` (mono ms) or `stop_fd` (-1 = none) is readable.
// A poll error counts as a timeout.
Wait wait_for(int fd, short events, int64_t deadline, int stop_fd);

}  // namespace space::egress
