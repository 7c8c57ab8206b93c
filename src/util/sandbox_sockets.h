// SandboxSockets: the per-sandbox listening sockets of a host daemon (the credential helper's
// and the network broker's, one in each running sandbox's run directory, which its VMM dials).
// sync() listens for the sandboxes wanted now and stops for the rest (a socket whose file is no
// longer ours, because a new run directory replaced the old, is made again); each socket is open
// (0660) to the group of its sandbox's run directory, the jail's. A connection is accepted
// through an Acceptor (safe when descriptors run out) and handed over with its sandbox's id and
// its peer's credentials. Destroying it stops listening and unlinks the files still ours.
#pragma once
#include <sys/socket.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "util/acceptor.h"
#include "util/event_loop.h"
#include "util/fd.h"
#include "util/log.h"
#include "util/socket.h"

namespace space {

class SandboxSockets {
 public:
  // Where sandbox `id`'s socket is.
  using PathOf = std::function<std::string(const std::string& id)>;
  // One connection accepted for sandbox `id` ("" for a daemon's own socket: accept_pending),
  // with its peer's credentials (SO_PEERCRED). A connection whose peer cannot be read is closed.
  using OnConn = std::function<void(Fd conn, const std::string& id, const ucred& peer)>;

  SandboxSockets(EventLoop& loop, PathOf path_of, int backlog, OnConn on_conn);
  ~SandboxSockets();
  SandboxSockets(const SandboxSockets&) = delete;
  SandboxSockets& operator=(const SandboxSockets&) = delete;

  // Listens for exactly the sandboxes of `want` (id -> the group its socket is open to).
  void sync(const std::map<std::string, gid_t>& want);
  bool empty() const { return listeners_.empty(); }
  // Accepts every connection waiting on `listener` and hands each to on_conn with `id`; also
  // for a daemon's operator socket, on the same Acceptor.
  void accept_pending(int listener, const std::string& id);

 private:
  EventLoop& loop_;
  PathOf path_of_;
  int backlog_;
  OnConn on_conn_;
  Acceptor acceptor_;
  log::Throttle warn_;  // what sandboxes provoke is rate-limited
  std::map<std::string, net::Listener> listeners_;
};

// The group of directory `dir` (a sandbox's run directory: the jail's group), or nothing when it
// is not a directory (the sandbox does not run).
std::optional<gid_t> directory_group(const std::string& dir);

}  // namespace space
