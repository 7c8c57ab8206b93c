// Unit tests for util/socket: deadlines and cancellation fds, line reads on pipes and sockets
// (one line at a time, nothing past the newline consumed), unix_connect's errors, and who a
// listener serves (mode 0600, and peer_trusted: root or our uid only).
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "support/temp_dir.h"
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

TEST_CASE("unix_listen makes the socket 0600; peer_trusted accepts root and us, not others") {
  test::TempDir dir("peer");
  std::string path = dir.path + "/s.sock";
  ::chmod(dir.path.c_str(), 0755);  // let another uid reach the socket file
  Fd l = net::unix_listen(path);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  Fd mine = net::unix_connect(path, net::Deadline::after_ms(1000));
  net::wait_ready(l.get(), POLLIN, net::Deadline::after_ms(1000), "accept");
  Fd a(::accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
  REQUIRE(a);
  CHECK(net::peer_uid(a.get()) == static_cast<long>(::geteuid()));
  CHECK(net::peer_trusted(a.get()));
  if (::geteuid() != 0) return;  // the other-uid half needs root to become someone else
  ::chmod(path.c_str(), 0666);   // so that uid 65534 can connect at all
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(2);
    try {
      Fd c = net::unix_connect(path, net::Deadline::after_ms(2000));
      char b;
      ::recv(c.get(), &b, 1, 0);  // until the parent has looked
    } catch (...) {
      _exit(3);
    }
    _exit(0);
  }
  net::wait_ready(l.get(), POLLIN, net::Deadline::after_ms(2000), "accept");
  Fd other(::accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
  REQUIRE(other);
  CHECK(net::peer_uid(other.get()) == 65534);
  CHECK_FALSE(net::peer_trusted(other.get()));
  other.reset();
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WEXITSTATUS(status) == 0);
}
