// ControlServer: the VMM's Unix control socket (control.sock). Clients send one request per line
// and get one reply line back (proto/control.h); the server only frames lines, and hands each to
// the handler the VMM supplies (monitor/control_ops.h), which answers every line, garbage
// included, with a reply line. It runs on the event loop thread. Lines are capped at 64 KiB and
// clients at 16, so a misbehaving client cannot exhaust the VMM. A request may carry descriptors
// (SCM_RIGHTS: a snapshot's directory, a branch's disks and sockets); the handler gets those that
// arrived with its line, at most 512, and whatever it leaves is closed.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "util/acceptor.h"
#include "util/event_loop.h"
#include "util/fd.h"
#include "util/log.h"

namespace space::monitor {

class ControlServer {
 public:
  // Answers one request line (without its newline) with a reply line (with its newline).
  using Handler = std::function<std::string(const std::string& line, std::vector<Fd>& fds)>;

  // Listens on `path` and registers with `loop`. Throws on failure.
  ControlServer(EventLoop& loop, const std::string& path, Handler handler);
  // Serves `listener`, a socket bound by someone else, on which it calls listen() (so that
  // SO_PEERCRED names this process); the socket file is not removed on destruction.
  ControlServer(EventLoop& loop, Fd listener, Handler handler);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

 private:
  struct Client {
    Fd fd;
    std::string in;
    std::vector<Fd> fds;  // received with the line being read
  };
  void on_accept();
  void on_client(int fd);
  void close_client(int fd);

  EventLoop& loop_;
  std::string path_;
  Fd listen_;
  Acceptor acceptor_;
  log::Throttle warn_;
  Handler handler_;
  std::map<int, Client> clients_;
};

}  // namespace space::monitor
