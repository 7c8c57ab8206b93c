// Unit tests for devices/serial, the 16550 UART: what the 8250 driver's probe checks, output
// written to its fd with THRE interrupts, the receive path, save/restore, and the bounds a
// hostile guest meets (the 16-byte FIFO with overrun, the console file's size limit).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "devices/serial.h"
#include "support/device_io.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"

using namespace space;
using space::test::FakeIrq;
using space::test::rd;
using space::test::wr;

TEST_CASE("serial passes the 8250 driver's probe") {
  FakeIrq irq;
  devices::Serial s(irq, -1);
  wr(s, 1, 0);
  CHECK((rd(s, 1) & 0x0f) == 0);
  wr(s, 1, 0x0f);
  CHECK((rd(s, 1) & 0x0f) == 0x0f);
  wr(s, 1, 0);
  wr(s, 7, 0xa5);
  CHECK(rd(s, 7) == 0xa5);
  wr(s, 4, 0x10 | 0x0a);  // loopback, RTS, OUT2
  CHECK((rd(s, 6) & 0xf0) == 0x90);
  wr(s, 4, 0x08);
  wr(s, 2, 0x01);  // FIFO on
  CHECK((rd(s, 2) & 0xc0) == 0xc0);
  CHECK((rd(s, 5) & 0x60) == 0x60);
}

TEST_CASE("serial writes THR to its fd and raises THRE interrupts") {
  Pipe p = Pipe::make();
  FakeIrq irq;
  devices::Serial s(irq, p.write.get());
  wr(s, 0, 'h');
  wr(s, 0, 'i');
  char buf[2];
  REQUIRE(read(p.read.get(), buf, 2) == 2);
  CHECK(std::string(buf, 2) == "hi");
  CHECK(!irq.high());  // THRI not enabled yet
  wr(s, 1, 0x02);      // enable THRI: THR is empty, so the interrupt is pending at once
  CHECK(irq.high());
  CHECK((rd(s, 2) & 0x0f) == 0x02);  // IIR says THRE; reading it clears it
  CHECK(!irq.high());
  CHECK((rd(s, 2) & 0x0f) == 0x01);
  wr(s, 0, 'x');  // transmit: THRE pending again
  CHECK(irq.high());
  wr(s, 1, 0);  // disable THRI: line drops
  CHECK(!irq.high());
}

TEST_CASE("serial receive path and save/restore") {
  FakeIrq irq;
  devices::Serial s(irq, -1);
  wr(s, 1, 0x01);
  wr(s, 4, 0x10);  // loopback: what the guest transmits, it receives
  CHECK(!irq.high());
  wr(s, 0, 'a');
  wr(s, 0, 'b');
  CHECK(irq.high());
  CHECK((rd(s, 5) & 1) == 1);
  CHECK(rd(s, 0) == 'a');
  auto saved = s.save();
  devices::Serial t(irq, -1);
  t.restore(saved);
  CHECK(rd(t, 1) == 0x01);
  CHECK(rd(t, 0) == 'b');
  CHECK((rd(t, 5) & 1) == 0);
  saved.pop_back();
  CHECK_THROWS_AS(t.restore(saved), Error);
}

TEST_CASE("a guest flooding loopback mode fills the 16-byte FIFO and sees overrun") {
  FakeIrq irq;
  devices::Serial s(irq, -1);
  wr(s, 4, 0x10);  // loopback
  for (int i = 0; i < 100000; i++) wr(s, 0, static_cast<uint8_t>(i));
  uint8_t lsr = rd(s, 5);
  CHECK((lsr & 0x02) == 0x02);    // OE
  CHECK((rd(s, 5) & 0x02) == 0);  // cleared by the read
  int got = 0;
  while (rd(s, 5) & 1) {
    CHECK(rd(s, 0) == static_cast<uint8_t>(got));  // the first 16 bytes are kept
    got++;
  }
  CHECK(got == 16);
  auto saved = s.save();  // the saved FIFO is bounded too
  CHECK(saved.size() < 64);
}

TEST_CASE("the console file keeps the newest output within its limit") {
  test::TempDir dir("serial");
  std::string path = dir.path + "/console.log";
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  REQUIRE(fd);
  FakeIrq irq;
  devices::Serial s(irq, fd.get(), 4096);
  for (int i = 0; i < 20000; i++) wr(s, 0, static_cast<uint8_t>('a' + i % 26));
  wr(s, 0, '!');
  std::string text = fs::read_file(path);
  CHECK(text.size() <= 4096);
  CHECK(text.rfind("[space: this log reached its limit of 4096 bytes", 0) == 0);
  CHECK(text.back() == '!');
}
