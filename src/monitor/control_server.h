// ControlServer: the VMM's Unix control socket (control.sock). Clients send one JSON object per
// line ({"op":"ping"}, {"op":"stop"}, ...) and get one JSON object per line back ({"ok":true,...}
// or {"ok":false,"error":"..."}). It runs on the event loop thread; requests are dispatched to a
// handler the VMM supplies. Lines are capped at 64 KiB and clients at 16, so a misbehaving
// client cannot exhaust the VMM; a client that sends garbage gets an error reply.
#pragma once
#include <functional>
#include <map>
#include <string>

#include "util/fd.h"
#include "util/json.h"
#include "util/event_loop.h"

namespace space::monitor {

class ControlServer {
 public:
  using Handler = std::function<json::Value(const json::Value& request)>;

  // Listens on `path` and registers with `loop`. Throws on failure.
  ControlServer(EventLoop& loop, const std::string& path, Handler handler);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

 private:
  struct Client {
    Fd fd;
    std::string in;
  };
  void on_accept();
  void on_client(int fd);
  void close_client(int fd);
  std::string dispatch(const std::string& line);

  EventLoop& loop_;
  std::string path_;
  Fd listen_;
  Handler handler_;
  std::map<int, Client> clients_;
};

}  // namespace space::monitor
