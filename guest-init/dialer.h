// Dialer: the agent's connections under the gVisor engine, where the host cannot connect into
// the sandbox. guest-init dials the sandbox monitor's agent socket (proto/agent.h,
// kGvisorHostDir/1024.sock) itself and keeps `idle` connections there; the monitor hands one to
// each host client. A connection becomes a session (the same serve_connection as an accepted
// vsock stream) once the host's first byte arrives; its dialling thread then dials the next.
// A refused or failed dial (the monitor is not listening, e.g. while runsc checkpoints the
// sandbox, which cannot save a connected host socket) is retried after a short back-off, so the
// pool refills by itself once the monitor listens again, also after a restore into a new
// sandbox. The host closing an idle connection (to quiesce before a checkpoint) just ends it.
#pragma once
#include <atomic>
#include <string>

#include "context.h"

namespace space::guest {

constexpr int kDialIdle = 2;           // idle connections kept at the monitor
constexpr int kDialBackoffMaxMs = 20;  // the longest wait between two refused dials

// Starts `idle` detached threads that keep connections to the Unix socket `path` and serve each
// as a session. Returns at once; never throws (a thread that cannot start is logged). Each thread
// ends once `*stop` (when given, for tests) is true and its idle connection has ended.
void start_dialers(Context& ctx, const std::string& path, int idle = kDialIdle,
                   const std::atomic<bool>* stop = nullptr);

// One dial to `path` (blocking, close-on-exec); invalid with errno set on failure.
Fd dial_unix(const std::string& path) noexcept;

}  // namespace space::guest
