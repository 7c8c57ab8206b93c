// FakeServer: a listening Unix socket in a temporary directory whose connections a thread hands,
// one at a time, to the test's `serve` function; a stand-in for the VMM's control.sock or
// vsock.sock in the host-side client tests. Plus the two blocking line helpers those `serve`
// functions use.
#pragma once
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "support/temp_dir.h"
#include "util/fd.h"

namespace space::test {

struct FakeServer {
  TempDir dir{"sock"};
  std::string path;
  Fd listener;
  std::thread thread;
  std::atomic<bool> stop{false};
  std::atomic<int> accepted{0};

  // `serve` gets each accepted connection and its number (1, 2, ...); the socket is `name`.
  explicit FakeServer(std::function<void(int fd, int n)> serve, const char* name = "s.sock") {
    path = dir.path + "/" + name;
    listener = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listener.get(), 8) == 0);
    thread = std::thread([this, serve] {
      while (!stop) {
        pollfd p{listener.get(), POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        Fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (c) serve(c.get(), ++accepted);
      }
    });
  }
  ~FakeServer() {
    stop = true;
    thread.join();
  }
};

// One line from a blocking fd, without its newline (what was read before EOF, at EOF).
inline std::string read_line_blocking(int fd) {
  std::string s;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') s += c;
  return s;
}

inline void write_str(int fd, const std::string& s) {
  write_all(fd, s.data(), s.size());
}

}  // namespace space::test
