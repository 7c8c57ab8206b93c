// AgentPool: the gVisor monitor's side of the agent channel. The host cannot connect into a
// gVisor sandbox, so guest-init dials the monitor's agent socket and leaves idle connections
// there (guest-init/dialer.h); a host client arrives on vsock.sock with the same "CONNECT
// <port>\n" convention as a VM's (core/agent_client.h), is answered "OK <port>\n" once it has a
// guest connection, and the two are relayed (util/relay.h) until either side ends. So exec, cp
// and forward work unchanged on both engines. Clients wait for a guest connection up to their
// deadline; idle guest connections the guest has closed are dropped when found. Before a
// checkpoint (runsc cannot save a connected host socket) close_idle() drops the idle ones and
// refuses new ones until reopen(). Thread-safe: guest connections arrive on the event loop,
// host clients are served on threads of their own.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "util/fd.h"

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
  // Closes the idle connections and keeps refusing new ones until reopen(): true once no
  // connection at all is open (false: relays still run, and `open()` says how many).
  bool close_idle();
  void reopen();
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

}  // namespace space::monitor
