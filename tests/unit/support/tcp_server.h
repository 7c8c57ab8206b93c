// TcpServer: a listening TCP socket on a loopback address of this machine (127.0.0.2 by default,
// never anything else), or on an address of a network namespace the test made (own_netns.h),
// on a free port, whose connections a thread serves one at a time with the test's function; a
// stand-in for a remote host in the network broker and proxy tests. Plus echo_service (bytes
// back until EOF) and http_service (one canned HTTP answer that names the request line it got).
#pragma once
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "util/fd.h"

namespace space::test {

struct TcpServer {
  std::string host;
  uint16_t port = 0;
  Fd listener;
  std::thread thread;
  std::atomic<bool> stop{false};
  std::atomic<int> accepted{0};

  explicit TcpServer(std::function<void(int fd)> serve, const std::string& addr = "127.0.0.2")
      : host(addr) {
    listener = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(listener);
    int one = 1;
    ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    REQUIRE(::inet_pton(AF_INET, addr.c_str(), &a.sin_addr) == 1);
    REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listener.get(), 16) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port = ntohs(a.sin_port);
    thread = std::thread([this, serve] {
      while (!stop) {
        pollfd p{listener.get(), POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        Fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!c) continue;
        accepted++;
        serve(c.get());
      }
    });
  }
  ~TcpServer() {
    stop = true;
    thread.join();
  }
  std::string address() const { return host + ":" + std::to_string(port); }
};

// Writes back what it reads until EOF, then closes.
inline void echo_service(int fd) {
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    if (::send(fd, buf, size_t(n), MSG_NOSIGNAL) != n) return;
  }
}

// Reads a request head and answers 200 with "got: <request line>" as the body, then closes.
inline void http_service(int fd) {
  std::string head;
  char buf[1024];
  while (head.find("\r\n\r\n") == std::string::npos) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    head.append(buf, size_t(n));
  }
  std::string body = "got: " + head.substr(0, head.find("\r\n"));
  std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\nConnection: close\r\n\r\n" + body;
  (void)!::send(fd, resp.data(), resp.size(), MSG_NOSIGNAL);
}

// A TCP port on 127.0.0.2 that nothing listens on (bound then closed: refused on connect).
inline uint16_t closed_port() {
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
  REQUIRE(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// Reads from `fd` until EOF or `limit` bytes; what was read.
inline std::string read_all(int fd, size_t limit = 1 << 20) {
  std::string out;
  char buf[4096];
  while (out.size() < limit) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  return out;
}

}  // namespace space::test
