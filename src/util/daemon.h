// The on-demand daemons' common steps (the credential helper, the network broker): at most one
// per lock file, held with flock for the daemon's life, and a start that waits for the daemon's
// ready line (util/ready.h) so that its caller gets the daemon's own error message, not a
// timeout. Inside, the same skeleton: the ready pipe it was given, its stop signals on its event
// loop, and its exit once idle; the next client starts it again. The monitors (a VMM, a gvisor
// sandbox's) take their signals the same way (watch_signals).
#pragma once
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <string>
#include <vector>

#include "util/event_loop.h"
#include "util/fd.h"
#include "util/process.h"

namespace space::daemon {

// An exclusive flock on `path` (created 0600), taken within `wait_ms` (a daemon on its way out
// still holds it for a moment); an invalid Fd if another process keeps it. Throws on open errors.
Fd take_lock(const std::string& path, int wait_ms);
// A daemon's lock, taken as take_lock does. When another daemon of its kind holds it, that one
// serves: logs `already` (what is running, and for what), reports "ok" on `ready` (its starter
// then uses the running one) and returns an invalid Fd, and the caller exits 0.
Fd claim(const std::string& lock_path, int wait_ms, Fd& ready, const std::string& already);
// True while a daemon holds `path` (probed with a shared lock for an instant).
bool running(const std::string& lock_path);
// Starts `argv` as a detached daemon (stdout/stderr to `log_path`, the ready pipe as fd 3, which
// argv must name) and waits up to `timeout_ms` for its ready line. Returns the child, still owned
// (release() it to let it run on). Throws naming `what` ("the network broker") with the daemon's
// message and a hint pointing at its log.
proc::Child start(const std::vector<std::string>& argv, const std::string& log_path,
                  const std::string& what, int timeout_ms);

// The ready pipe a daemon was started with (fd `fd`), or an invalid Fd when nothing is open there
// (started by hand).
Fd ready_pipe(int fd);
// Reports `line` ("ok") on the ready pipe and closes it.
void report_ready(Fd& ready, const std::string& line = "ok");
// Reports why the daemon could not start on the ready pipe, closes it, and returns the exit code.
int report_start_failure(Fd& ready, const std::exception& e);

// `signals` blocked (in this thread and every thread it starts later: call it first) and
// delivered through the returned signalfd instead; with `ignore_sigpipe`, SIGPIPE ignored, so that
// a peer that goes is an error on its socket, not the end of the process (the programs the
// process runs inherit that).
Fd watch_signals(std::initializer_list<int> signals, bool ignore_sigpipe = true);
// SIGTERM, SIGINT and SIGHUP watched on `loop` (through the returned signalfd, which must outlive
// the loop's use of it): each is logged and stops the loop.
Fd stop_loop_on_signals(EventLoop& loop);

// When a daemon with nothing to serve exits: `idle_ms` after its last activity.
class IdleExit {
 public:
  explicit IdleExit(int64_t idle_ms);
  // Activity now (a connection, a request).
  void touch();
  // While `busy` (something still needs the daemon), how long until it looks again (`check_ms`);
  // else the milliseconds left before it should exit, <= 0 meaning now (logged once).
  int64_t left(bool busy, int64_t check_ms);
  int64_t idle_ms() const { return idle_ms_; }

 private:
  int64_t idle_ms_;
  int64_t last_;
};

}  // namespace space::daemon
