// The on-demand daemons' common steps (the credential helper, the network broker): at most one
// per lock file, held with flock for the daemon's life, and a start that waits for the daemon's
// ready line (util/ready.h) so that its caller gets the daemon's own error message, not a
// timeout. A daemon stops when idle; the next client starts it again.
#pragma once
#include <string>
#include <vector>

#include "util/fd.h"
#include "util/process.h"

namespace space::daemon {

// An exclusive flock on `path` (created 0600), taken within `wait_ms` (a daemon on its way out
// still holds it for a moment); an invalid Fd if another process keeps it. Throws on open errors.
Fd take_lock(const std::string& path, int wait_ms);
// True while a daemon holds `path` (probed with a shared lock for an instant).
bool running(const std::string& lock_path);
// Starts `argv` as a detached daemon (stdout/stderr to `log_path`, the ready pipe as fd 3, which
// argv must name) and waits up to `timeout_ms` for its ready line. Returns the child, still owned
// (release() it to let it run on). Throws naming `what` ("the network broker") with the daemon's
// message and a hint pointing at its log.
proc::Child start(const std::vector<std::string>& argv, const std::string& log_path,
                  const std::string& what, int timeout_ms);

}  // namespace space::daemon
