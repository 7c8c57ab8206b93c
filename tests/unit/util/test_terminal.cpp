// Unit tests for util/terminal on a pseudo-terminal from openpty (no real tty needed): the
// window size, raw mode set and the saved settings put back, and neither touching a non-tty.
#include <doctest/doctest.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "util/fd.h"
#include "util/terminal.h"

using namespace space;

namespace {

struct Pty {
  Fd master, slave;
  Pty() {
    int m = -1, s = -1;
    REQUIRE(::openpty(&m, &s, nullptr, nullptr, nullptr) == 0);
    master.reset(m);
    slave.reset(s);
  }
};

termios attrs(int fd) {
  termios t{};
  REQUIRE(::tcgetattr(fd, &t) == 0);
  return t;
}

}  // namespace

TEST_CASE("window_size reads a terminal's rows and columns; nothing for 0x0 or a non-tty") {
  Pty pty;
  winsize ws{};
  ws.ws_row = 40;
  ws.ws_col = 120;
  REQUIRE(::ioctl(pty.master.get(), TIOCSWINSZ, &ws) == 0);
  auto s = term::window_size(pty.slave.get());
  REQUIRE(s.has_value());
  CHECK(s->rows == 40);
  CHECK(s->cols == 120);
  ws.ws_row = 0;
  REQUIRE(::ioctl(pty.master.get(), TIOCSWINSZ, &ws) == 0);
  CHECK_FALSE(term::window_size(pty.slave.get()).has_value());
  Pipe p = Pipe::make();
  CHECK_FALSE(term::window_size(p.read.get()).has_value());
  CHECK_FALSE(term::window_size(-1).has_value());
}

TEST_CASE("RawMode makes a terminal raw and puts its settings back") {
  Pty pty;
  termios before = attrs(pty.slave.get());
  REQUIRE((before.c_lflag & (ECHO | ICANON | ISIG)) == (ECHO | ICANON | ISIG));
  {
    term::RawMode raw(pty.slave.get());
    CHECK(raw.active());
    termios t = attrs(pty.slave.get());
    CHECK((t.c_lflag & (ECHO | ICANON | ISIG | IEXTEN)) == 0);  // no echo, editing, signal keys
    CHECK((t.c_oflag & OPOST) == 0);                            // no output processing
    CHECK((t.c_iflag & (ICRNL | IXON)) == 0);
    CHECK(t.c_cc[VMIN] == 1);
  }
  termios after = attrs(pty.slave.get());
  CHECK(after.c_lflag == before.c_lflag);
  CHECK(after.c_iflag == before.c_iflag);
  CHECK(after.c_oflag == before.c_oflag);
  CHECK(after.c_cflag == before.c_cflag);
}

TEST_CASE("RawMode leaves what is not a terminal alone") {
  Pipe p = Pipe::make();
  term::RawMode raw(p.read.get());
  CHECK_FALSE(raw.active());
  term::RawMode none(-1);
  CHECK_FALSE(none.active());
}
