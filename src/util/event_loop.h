// EventLoop: one epoll set, run on one thread, that serves every host-side fd of the VMM
// (the control socket, vsock's Unix sockets, device timers). Handlers run on the loop thread.
// add/modify/remove may be called from handlers; other threads wake the loop with wake().
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>

#include "util/fd.h"

namespace space {

class EventLoop {
 public:
  using Handler = std::function<void(uint32_t events)>;

  EventLoop();  // throws on failure
  // Watches `fd` for `events` (EPOLLIN, EPOLLOUT, ...); `fd` must stay open until remove().
  void add(int fd, uint32_t events, Handler handler);
  // Changes the event mask of a watched fd.
  void modify(int fd, uint32_t events);
  // Stops watching fd (safe to call from its own handler; unknown fds are ignored).
  void remove(int fd);
  // Runs until stop(); each iteration waits at most `timeout_ms` (-1: forever).
  void run(int timeout_ms = -1);
  // Runs one wait-and-dispatch round; returns the number of events handled.
  int run_once(int timeout_ms);
  // Asks run() to return; callable from any thread.
  void stop();
  bool stopping() const { return stop_.load(); }

 private:
  Fd epoll_;
  Fd wake_;  // eventfd
  std::unordered_map<int, std::shared_ptr<Handler>> handlers_;
  std::atomic<bool> stop_{false};
};

}  // namespace space
