// Unit tests for util/socket: deadlines and cancellation fds, line reads on pipes and sockets
// (one line at a time, nothing past the newline consumed), and unix_connect's errors.
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "util/error.h"
#include "util/fd.h"
#include "util/socket.h"

using namespace space;

namespace {
void write_str(int fd, const std::string& s) {
  write_all(fd, s.data(), s.size());
}
}  // namespace

TEST_CASE("deadlines time out and cancel fds cancel") {
  Pipe p = Pipe::make();
  set_nonblocking(p.read.get());
  try {
    net::read_line(p.read.get(), net::Deadline::after_ms(30));
    FAIL("no timeout");
  } catch (const Error& e) {
    CHECK(e.err() == ETIMEDOUT);
  }
  Pipe cancel = Pipe::make();
  write_str(cancel.write.get(), "x");
  auto dl = net::Deadline::never();
  dl.cancel_on(cancel.read.get());
  CHECK_THROWS_AS(net::read_line(p.read.get(), dl), net::Cancelled);
  CHECK_THROWS_AS(net::sleep_ms(5000, dl), net::Cancelled);
  write_str(p.write.get(), "line one\npartial");
  p.write.reset();
  CHECK(net::read_line(p.read.get(), net::Deadline::after_ms(1000)) == "line one");
  CHECK_THROWS_WITH_AS(net::read_line(p.read.get(), net::Deadline::after_ms(1000)),
                       doctest::Contains("middle of a line"), Error);
  CHECK(net::Deadline::after_ms(1000).capped_ms(10).remaining_ms() <= 10);
}

TEST_CASE("read_line on a socket takes one line and leaves what follows") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  Fd a(sv[0]), b(sv[1]);
  auto dl = [] { return net::Deadline::after_ms(1000); };
  write_str(a.get(), "OK 1024\nfirst\nsec");
  CHECK(net::read_line(b.get(), dl(), 64) == "OK 1024");
  CHECK(net::read_line(b.get(), dl(), 64) == "first");
  std::thread later([&] {
    ::usleep(20000);
    write_str(a.get(), "ond\nrest");
  });
  CHECK(net::read_line(b.get(), dl(), 64) == "second");  // a line split across two writes
  later.join();
  char rest[8] = {};
  CHECK(::read(b.get(), rest, sizeof rest) == 4);  // nothing after the newline was consumed
  CHECK(std::string(rest) == "rest");
  write_str(a.get(), std::string(100, 'x') + "\n");
  CHECK_THROWS_WITH_AS(net::read_line(b.get(), dl(), 64), doctest::Contains("longer than 64"),
                       Error);
  a.reset();
  CHECK_FALSE(net::read_line(b.get(), dl(), 1000).has_value());  // EOF at a line boundary
}

TEST_CASE("unix_connect errors carry errno") {
  try {
    net::unix_connect("/tmp/space-test-definitely-missing.sock", net::Deadline::after_ms(100));
    FAIL("connected");
  } catch (const Error& e) {
    CHECK(e.err() == ENOENT);
  }
  CHECK_THROWS_WITH_AS(net::unix_connect(std::string(200, 'x'), net::Deadline::after_ms(100)),
                       doctest::Contains("longer than"), Error);
}
