// Unit tests for guest-init/dialer (the gVisor engine's agent channel): guest-init dials the
// monitor's socket and keeps idle connections there; a host that writes on one is served as on
// an accepted vsock connection (the Hello handshake here); each used connection is replaced; a
// refused dial is retried, so the pool refills once something listens again.
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "agent/client.h"
#include "guest-init/context.h"
#include "guest-init/dialer.h"
#include "support/temp_dir.h"
#include "util/fd.h"
#include "util/socket.h"

using namespace space;

namespace {

// Accepts one connection within `ms`, or an invalid Fd.
Fd accept_within(int listener, int ms) {
  pollfd p{listener, POLLIN, 0};
  if (::poll(&p, 1, ms) <= 0) return Fd();
  return Fd(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
}

}  // namespace

TEST_CASE("dialer: idle connections to the monitor, each served once the host writes") {
  test::TempDir d("dialer");
  const std::string path = d.path + "/1024.sock";
  static guest::Context ctx;  // the dialler threads may outlive this test's frame by a moment
  static std::atomic<bool> stop{false};
  ctx.hostname = "dialed";
  Fd listener = net::unix_listen(path, 8);
  guest::start_dialers(ctx, path, 2, &stop);
  Fd first = accept_within(listener.get(), 5000);
  Fd second = accept_within(listener.get(), 5000);
  REQUIRE(first.valid());
  REQUIRE(second.valid());
  // The host speaks first: guest-init answers as on any agent connection.
  auto reply = agent::agent_hello(first.get(), net::Deadline::after_ms(5000));
  CHECK(reply.hostname == "dialed");
  // The used connection is replaced by a new idle one.
  Fd third = accept_within(listener.get(), 5000);
  CHECK(third.valid());

  // Nothing listens for a while (a checkpoint): dials fail and are retried; a new listener gets
  // the pool back.
  listener.reset();
  ::unlink(path.c_str());
  second.reset();  // an idle one the host closes: guest-init dials again, and is refused
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Fd relisten = net::unix_listen(path, 8);
  Fd back = accept_within(relisten.get(), 5000);
  CHECK(back.valid());

  stop = true;
  first.reset();
  third.reset();
  back.reset();
  relisten.reset();
  ::unlink(path.c_str());
  for (int i = 0; i < 200 && ctx.sessions.load() > 0; i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));  // past the longest back-off
  CHECK(ctx.sessions.load() == 0);
}
