// Unit tests for guest-init/console: each message is one "guest-init: <msg>\n" line written with
// a single write, long messages cut to fit the 1 KiB line, and a bad fd ignored.
#include <doctest/doctest.h>
#include <unistd.h>

#include <string>

#include "guest-init/console.h"
#include "support/pipe_text.h"
#include "util/fd.h"

using namespace space;
using space::guest::Console;
using space::test::drain;

TEST_CASE("Console::log writes one prefixed line per message") {
  Pipe p = Pipe::make();
  Console con(p.write.get());
  CHECK(con.fd() == p.write.get());
  con.log("mounted /proc");
  con.log("");
  con.log(std::string("a\0b", 3));
  CHECK(drain(p) ==
        "guest-init: mounted /proc\nguest-init: \nguest-init: " + std::string("a\0b\n", 4));
}

TEST_CASE("Console::log cuts a long message to one 1 KiB line; a bad fd is ignored") {
  Pipe p = Pipe::make();
  Console con(p.write.get());
  con.log(std::string(5000, 'x'));
  std::string out = drain(p);
  CHECK(out.size() == 1024);
  CHECK(out.rfind("guest-init: xxx", 0) == 0);
  CHECK(out.back() == '\n');
  CHECK(out.find('\n') == 1023);
  Console bad(-1);
  CHECK_NOTHROW(bad.log("nowhere"));
}
