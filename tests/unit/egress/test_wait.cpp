// Unit tests for egress/wait.h: ready when the peer wrote, a timeout when it did not, stopped
// when the stop fd is readable (before the socket is looked at).
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "egress/wait.h"
#include "support/socket_pair.h"
#include "util/timing.h"

using namespace space;
using egress::Wait;

TEST_CASE("egress wait: ready, timeout, stopped") {
  test::SocketPair p;
  CHECK(egress::wait_for(p.a.get(), POLLIN, timing::mono_ms() + 50, -1) == Wait::Timeout);
  CHECK(egress::wait_for(p.a.get(), POLLOUT, timing::mono_ms() + 50, -1) == Wait::Ready);
  REQUIRE(::write(p.b.get(), "x", 1) == 1);
  CHECK(egress::wait_for(p.a.get(), POLLIN, timing::mono_ms() + 1000, -1) == Wait::Ready);
  Fd stop(::eventfd(0, EFD_CLOEXEC));
  REQUIRE(stop);
  CHECK(egress::wait_for(p.a.get(), POLLIN, timing::mono_ms() + 1000, stop.get()) == Wait::Ready);
  uint64_t one = 1;
  REQUIRE(::write(stop.get(), &one, sizeof one) == sizeof one);
  CHECK(egress::wait_for(p.a.get(), POLLIN, timing::mono_ms() + 1000, stop.get()) == Wait::Stopped);
  const int64_t t0 = timing::mono_ms();
  CHECK(egress::wait_for(p.a.get(), POLLIN, t0 - 10, -1) == Wait::Ready);  // ready at once
}
