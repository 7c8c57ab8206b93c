// Unit tests for monitor/agent_pool: a host client's CONNECT is answered and relayed through an
// idle connection guest-init dialled; a connection the guest has closed is passed over; a client
// asking for another port, or finding no guest in time, is closed unanswered; close_idle waits
// for the guest's end to close and refuses new connections until reopen(). Socket pairs stand in
// for both sides.
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "monitor/agent_pool.h"
#include "support/socket_pair.h"
#include "util/fd.h"
#include "util/socket.h"

using namespace space;
using monitor::AgentPool;

namespace {

using Pair = test::SocketPair;

std::string read_some(int fd, size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  auto dl = net::Deadline::after_ms(5000);
  while (got < n) {
    if (!net::recv_exact(fd, out.data() + got, 1, dl)) break;
    got++;
  }
  out.resize(got);
  return out;
}

// True once `fd` reads EOF (or an error) within a second.
bool closed_by_peer(int fd) {
  char c;
  for (int i = 0; i < 100; i++) {
    ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

TEST_CASE("agent pool: a host client is answered and relayed through a guest connection") {
  AgentPool pool;
  Pair guest;  // a: the monitor's end (the pool's), b: guest-init's
  pool.add_guest(std::move(guest.a));
  CHECK(pool.idle() == 1);
  Pair host;  // a: the monitor's end, b: the CLI's
  std::thread serve([&] { pool.serve_host(std::move(host.a), 5000); });
  net::send_all(host.b.get(), "CONNECT 1024\n", net::Deadline::after_ms(5000));
  CHECK(read_some(host.b.get(), 8) == "OK 1024\n");
  net::send_all(host.b.get(), "hello", net::Deadline::after_ms(5000));
  CHECK(read_some(guest.b.get(), 5) == "hello");
  net::send_all(guest.b.get(), "world", net::Deadline::after_ms(5000));
  CHECK(read_some(host.b.get(), 5) == "world");
  CHECK(pool.active() == 1);
  guest.b.reset();  // guest-init ends the conversation
  host.b.reset();
  serve.join();
  CHECK(pool.active() == 0);
  CHECK(pool.idle() == 0);
}

TEST_CASE("agent pool: a closed idle connection is passed over; no guest, no answer") {
  AgentPool pool;
  Pair dead, live;
  pool.add_guest(std::move(dead.a));
  dead.b.reset();  // guest-init gave up on this one
  pool.add_guest(std::move(live.a));
  Pair host;
  std::thread serve([&] { pool.serve_host(std::move(host.a), 5000); });
  net::send_all(host.b.get(), "CONNECT 1024\n", net::Deadline::after_ms(5000));
  CHECK(read_some(host.b.get(), 8) == "OK 1024\n");
  net::send_all(host.b.get(), "x", net::Deadline::after_ms(5000));
  CHECK(read_some(live.b.get(), 1) == "x");
  live.b.reset();
  host.b.reset();
  serve.join();

  // Another port: closed unanswered. No guest connection within the wait: the same.
  Pair other;
  std::thread s2([&] { pool.serve_host(std::move(other.a), 5000); });
  net::send_all(other.b.get(), "CONNECT 1025\n", net::Deadline::after_ms(5000));
  CHECK(closed_by_peer(other.b.get()));
  s2.join();
  Pair lonely;
  std::thread s3([&] { pool.serve_host(std::move(lonely.a), 200); });
  net::send_all(lonely.b.get(), "CONNECT 1024\n", net::Deadline::after_ms(5000));
  CHECK(closed_by_peer(lonely.b.get()));
  s3.join();
}

TEST_CASE("agent pool: close_idle waits for the guest's end, and refuses until reopen") {
  AgentPool pool;
  Pair g1, g2;
  pool.add_guest(std::move(g1.a));
  pool.add_guest(std::move(g2.a));
  // guest-init's side: reads EOF, then closes its end (as guest-init/dialer does).
  std::thread guest([&] {
    for (Fd* fd : {&g1.b, &g2.b}) {
      CHECK(closed_by_peer(fd->get()));
      fd->reset();
    }
  });
  auto t0 = std::chrono::steady_clock::now();
  CHECK(pool.close_idle(3000));
  guest.join();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
  CHECK(pool.idle() == 0);
  Pair refused;
  pool.add_guest(std::move(refused.a));  // while closed: dropped
  CHECK(pool.idle() == 0);
  CHECK(closed_by_peer(refused.b.get()));
  pool.reopen();
  Pair again;
  pool.add_guest(std::move(again.a));
  CHECK(pool.idle() == 1);
}

TEST_CASE("agent pool: close_confirmed gives up at its deadline when the peer keeps its end") {
  Pair p;
  auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(monitor::close_confirmed(std::move(p.a), net::Deadline::after_ms(200)));
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(150));
  CHECK(closed_by_peer(p.b.get()));
}
