// Unit tests for util/nonblocking: a pipe or character device is reopened through
// /proc/self/fd (a description of our own, so the caller's O_NONBLOCK flag is never touched), a
// socket is used with MSG_DONTWAIT, a regular file as it is; reads and writes never block.
#include <doctest/doctest.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "support/temp_dir.h"
#include "util/fd.h"
#include "util/nonblocking.h"

using namespace space;
using space::io::NonBlockingEnd;

namespace {

bool nonblocking(int fd) {
  return (::fcntl(fd, F_GETFL) & O_NONBLOCK) != 0;
}

}  // namespace

TEST_CASE("NonBlockingEnd reopens a pipe: no blocking, and the caller's flags stay as they were") {
  Pipe p = Pipe::make();
  NonBlockingEnd in = NonBlockingEnd::open(p.read.get(), false);
  NonBlockingEnd out = NonBlockingEnd::open(p.write.get(), true);
  CHECK(in.fd() >= 0);
  CHECK(in.fd() != p.read.get());  // a description of its own
  CHECK(out.fd() != p.write.get());
  CHECK(nonblocking(in.fd()));
  CHECK(nonblocking(out.fd()));
  CHECK_FALSE(nonblocking(p.read.get()));
  CHECK_FALSE(nonblocking(p.write.get()));

  char buf[64];
  errno = 0;
  CHECK(in.read(buf, sizeof buf) == -1);  // empty: EAGAIN, not a wait
  CHECK(errno == EAGAIN);
  CHECK(out.write("hello", 5) == 5);
  CHECK(in.read(buf, sizeof buf) == 5);
  CHECK(std::string(buf, 5) == "hello");

  // Writes stop with EAGAIN once the pipe is full, instead of blocking.
  std::string chunk(65536, 'x');
  ssize_t n = 0;
  int writes = 0;
  while ((n = out.write(chunk.data(), chunk.size())) > 0 && writes < 10000) writes++;
  CHECK(n == -1);
  CHECK(errno == EAGAIN);
  CHECK(writes < 10000);
}

TEST_CASE("NonBlockingEnd uses a socket as it is, with MSG_DONTWAIT") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  Fd a(sv[0]), b(sv[1]);
  NonBlockingEnd e = NonBlockingEnd::open(a.get(), false);
  CHECK(e.fd() == a.get());
  CHECK_FALSE(nonblocking(a.get()));
  char buf[16];
  errno = 0;
  CHECK(e.read(buf, sizeof buf) == -1);
  CHECK(errno == EAGAIN);
  CHECK(e.write("ping", 4) == 4);
  CHECK(::read(b.get(), buf, sizeof buf) == 4);
  CHECK(::write(b.get(), "pong", 4) == 4);
  CHECK(e.read(buf, sizeof buf) == 4);
  CHECK(std::string(buf, 4) == "pong");
  CHECK_FALSE(nonblocking(a.get()));
}

TEST_CASE("NonBlockingEnd uses a regular file as it is, whole writes included") {
  test::TempDir d("nonblocking");
  Fd f(::open((d.path + "/f").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  REQUIRE(f.valid());
  NonBlockingEnd e = NonBlockingEnd::open(f.get(), true);
  CHECK(e.fd() == f.get());
  std::string big(100000, 'y');  // far above PIPE_BUF: a file takes it in one write
  CHECK(e.write(big.data(), big.size()) == static_cast<ssize_t>(big.size()));
  CHECK(::lseek(f.get(), 0, SEEK_SET) == 0);
  char buf[8];
  CHECK(e.read(buf, sizeof buf) == 8);
  CHECK(std::string(buf, 8) == "yyyyyyyy");
}

TEST_CASE("NonBlockingEnd reopens a character device; an fd that is not open stays as given") {
  Fd null(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  REQUIRE(null.valid());
  NonBlockingEnd e = NonBlockingEnd::open(null.get(), true);
  CHECK(e.fd() != null.get());
  CHECK(nonblocking(e.fd()));
  CHECK_FALSE(nonblocking(null.get()));
  CHECK(e.write("x", 1) == 1);

  NonBlockingEnd bad = NonBlockingEnd::open(-1, false);
  CHECK(bad.fd() == -1);
  char c;
  CHECK(bad.read(&c, 1) == -1);
}
