// AgentPool: the gVisor monitor's side of the agent channel. The host cannot connect into a
// gVisor sandbox, so guest-init dials the monitor's agent socket and leaves idle connections
// there (guest-init/dialer.h); a host client arrives on vsock.sock with the same "CONNECT
// <port>\n" convention as a VM's (agent/client.h), is answered "OK <port>\n" once it has a
// guest connection, and the two are relayed (util/relay.h) until either side ends. So exec, cp
// and forward work unchanged on both engines. Clients wait for a guest connection up to their
// deadline; idle guest connections the guest has closed are dropped when found. Before a
// checkpoint (runsc cannot save a connected host socket, and a checkpoint that meets one ends
// the sandbox) close_idle() drops the idle ones, waiting until guest-init has closed its ends,
// and refuses new ones until reopen(). Thread-safe: guest connections arrive on the event loop,
// host clients are served on threads of their own.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "util/fd.h"
#include "util/socket.h"

namespace space::monitor {

class AgentPool {
 public:
  // A connection guest-init dialled: kept idle for the next host client (closed while closed).
  void add_guest(Fd conn);
  // Serves one host client of vsock.sock on the calling thread: reads its CONNECT line, waits up
  // to `wait_ms` for a guest connection, answers and relays. Never throws; a client that asks for
  // another port than the agent's, or finds no guest in time, is closed unanswered (as a VM's
  // vsock does while nothing listens), which callers that wait for a boot retry.
  void serve_host(Fd client, int wait_ms) noexcept;
  // Closes the idle connections, each once guest-init has closed its end too (or after
  // `wait_ms` in all), and keeps refusing new ones until reopen(): true once no connection at
  // all is open (false: relays still run, and active() says how many).
  bool close_idle(int wait_ms);
  void reopen();
  // An idle guest connection for the monitor's own use (its Hello after a restore), waiting up
  // to `wait_ms`; invalid if none came.
  Fd take_one(int wait_ms) { return take(wait_ms); }
  // Host clients being relayed now.
  int active() const { return active_.load(); }
  // Idle guest connections.
  size_t idle() const;

 private:
  Fd take(int wait_ms);
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Fd> idle_;
  bool closed_ = false;
  std::atomic<int> active_{0};
};

// Closes `fd` once its peer has closed its end: shutdown(SHUT_WR), which the peer reads as EOF,
// then reads until the peer's EOF, an error, or the deadline. True when the peer's EOF came.
bool close_confirmed(Fd fd, const net::Deadline& dl);

}  // namespace space::monitor
