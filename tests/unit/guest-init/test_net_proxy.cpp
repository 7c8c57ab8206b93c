// guest-init's HTTP proxy (guest-init/net_proxy.h) end to end without a VM: a client on
// 127.0.0.1 talks to the proxy, which dials a Unix socket where the host's real connection
// code (egress/connection.h) serves as the broker, which connects to TCP servers on 127.0.0.2.
// A plain request is forwarded in origin form, CONNECT becomes a tunnel, and the broker's
// refusals and the proxy's own (a malformed request, an unreachable broker) reach the client as
// HTTP responses that say why.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "egress/connection.h"
#include "guest-init/net_proxy.h"
#include "support/fake_server.h"
#include "support/tcp_server.h"
#include "util/fs.h"

using namespace space;
using space::test::TcpServer;

namespace {

// The broker stand-in: each connection is served by serve_connection with the current rules.
struct Broker {
  std::mutex mu;
  std::vector<std::string> rules;
  test::FakeServer server{[this](int fd, int) {
    std::vector<std::string> now;
    {
      std::lock_guard<std::mutex> g(mu);
      now = rules;
    }
    egress::serve_connection(
        Fd(::dup(fd)), "s1", "", [now] { return egress::policy_from_texts(now); },
        [](const std::string& h, std::string& err) {
          err = "unknown host " + h;
          return std::vector<egress::IpAddress>{};
        },
        egress::ConnLimits{}, -1);
  }};
  void allow(const std::string& rule) {
    std::lock_guard<std::mutex> g(mu);
    rules.push_back(rule);
  }
};

// Threads that outlive their test start with every signal blocked, as guest-init's do: a
// process-directed signal another test sends itself (SIGINT, SIGCHLD) must not land on them.
template <class F>
auto with_signals_blocked(F f) {
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &old);
  auto r = f();
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return r;
}

// One broker and one proxy for the whole process: the proxy's accept thread outlives any test.
// The broker's socket directory goes when the process exits.
Broker& broker() {
  static Broker* b = with_signals_blocked([] { return new Broker; });
  static const std::string dir = b->server.dir.path;
  static const int registered = std::atexit([] {
    try {
      fs::remove_tree(dir);
    } catch (...) {
    }
  });
  (void)registered;
  return *b;
}

guest::NetProxy& proxy() {
  static guest::NetProxy* p = [] {
    auto* np = new guest::NetProxy;
    guest::ProxyOptions o;
    o.port = 0;
    o.egress_unix = broker().server.path;
    o.head_timeout_ms = 2000;
    REQUIRE(with_signals_blocked([&] { return np->ensure(o); }) == "");
    return np;
  }();
  return *p;
}

Fd dial(uint16_t port) {
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return s;
}

void say(int fd, const std::string& s) {
  REQUIRE(::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size()));
}

// Reads up to and including the blank line after a response head.
std::string head_of(int fd) {
  std::string h;
  char c;
  while (h.find("\r\n\r\n") == std::string::npos && ::recv(fd, &c, 1, 0) == 1) h += c;
  return h;
}

}  // namespace

TEST_CASE("a plain HTTP request goes through the broker in origin form") {
  TcpServer web(test::http_service);
  broker().allow(web.address());
  Fd c = dial(proxy().port());
  say(c.get(), "GET http://" + web.address() + "/index.html?q=1 HTTP/1.1\r\nHost: " +
                   web.address() + "\r\nProxy-Connection: keep-alive\r\n\r\n");
  std::string resp = test::read_all(c.get());
  CHECK(resp.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(resp.find("got: GET /index.html?q=1 HTTP/1.1") != std::string::npos);
}

TEST_CASE("CONNECT opens a tunnel that carries bytes both ways") {
  TcpServer echo(test::echo_service);
  broker().allow(echo.address());
  Fd c = dial(proxy().port());
  say(c.get(), "CONNECT " + echo.address() + " HTTP/1.1\r\nHost: " + echo.address() + "\r\n\r\n");
  CHECK(head_of(c.get()) == "HTTP/1.1 200 Connection established\r\n\r\n");
  std::string data(50'000, 'z');
  say(c.get(), data);
  ::shutdown(c.get(), SHUT_WR);
  CHECK(test::read_all(c.get()) == data);
}

TEST_CASE("refusals reach the client as HTTP responses that say why") {
  TcpServer other(test::echo_service, "127.0.0.3");
  SUBCASE("an address the policy does not allow") {
    Fd c = dial(proxy().port());
    say(c.get(), "CONNECT " + other.address() + " HTTP/1.1\r\n\r\n");
    std::string resp = test::read_all(c.get());
    CHECK(resp.rfind("HTTP/1.1 403 ", 0) == 0);
    CHECK(resp.find("127.0.0.3") != std::string::npos);
    CHECK(other.accepted == 0);
  }
  SUBCASE("a name the broker cannot resolve") {
    broker().allow("*.invalid");
    Fd c = dial(proxy().port());
    say(c.get(), "GET http://nowhere.invalid/ HTTP/1.1\r\nHost: nowhere.invalid\r\n\r\n");
    std::string resp = test::read_all(c.get());
    CHECK(resp.rfind("HTTP/1.1 502 ", 0) == 0);
    CHECK(resp.find("cannot resolve nowhere.invalid") != std::string::npos);
  }
  SUBCASE("not a proxy request") {
    Fd c = dial(proxy().port());
    say(c.get(), "GET /relative HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string resp = test::read_all(c.get());
    CHECK(resp.rfind("HTTP/1.1 400 ", 0) == 0);
  }
  SUBCASE("a client that never finishes its head") {
    Fd c = dial(proxy().port());
    say(c.get(), "CONNECT 127.0.0.2:1 HTTP/1.1\r\n");
    std::string resp = test::read_all(c.get());
    CHECK(resp.rfind("HTTP/1.1 408 ", 0) == 0);
  }
}

TEST_CASE("a 1 MiB request line and binary junk get an HTTP error, and the proxy goes on") {
  SUBCASE("a 1 MiB request line") {
    Fd c = dial(proxy().port());
    std::string line = "GET http://127.0.0.2/" + std::string(1 << 20, 'a');
    // The proxy answers and closes once it has seen too much; the rest of the send may fail.
    (void)!::send(c.get(), line.data(), line.size(), MSG_NOSIGNAL);
    std::string resp = test::read_all(c.get());
    CHECK(resp.rfind("HTTP/1.1 414 ", 0) == 0);
  }
  SUBCASE("binary junk") {
    Fd c = dial(proxy().port());
    std::string junk;
    for (int i = 0; i < 70'000; i++) junk += char((i * 7919 + 13) & 0xff);
    (void)!::send(c.get(), junk.data(), junk.size(), MSG_NOSIGNAL);
    std::string resp = test::read_all(c.get());
    CHECK(resp.rfind("HTTP/1.1 4", 0) == 0);
  }
  TcpServer web(test::http_service);
  broker().allow(web.address());
  Fd c = dial(proxy().port());
  say(c.get(), "GET http://" + web.address() + "/after HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(test::read_all(c.get()).find("got: GET /after HTTP/1.1") != std::string::npos);
}

TEST_CASE("a proxy whose broker cannot be reached answers 502 and names the fix") {
  static guest::NetProxy* p = new guest::NetProxy;  // lives on: its accept thread does
  guest::ProxyOptions o;
  o.port = 0;
  o.egress_unix = "/nonexistent/space-egress.sock";
  REQUIRE(with_signals_blocked([&] { return p->ensure(o); }) == "");
  CHECK(p->ensure(o) == "");  // once: later calls return the first outcome
  Fd c = dial(p->port());
  say(c.get(), "CONNECT 127.0.0.2:80 HTTP/1.1\r\n\r\n");
  std::string resp = test::read_all(c.get());
  CHECK(resp.rfind("HTTP/1.1 502 ", 0) == 0);
  CHECK(resp.find("network broker") != std::string::npos);
}
