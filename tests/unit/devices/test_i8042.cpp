// Unit tests for devices/i8042: the self-test and reset commands (a reset ends the VM), and its
// save/restore.
#include <doctest/doctest.h>

#include <vector>

#include "devices/i8042.h"
#include "support/device_io.h"
#include "util/error.h"

using namespace space;
using space::test::rd;
using space::test::wr;

TEST_CASE("i8042 reset command ends the VM") {
  int resets = 0;
  devices::I8042 k([&] { resets++; });
  CHECK((rd(k, 4) & 1) == 0);
  wr(k, 4, 0xaa);
  CHECK((rd(k, 4) & 1) == 1);
  CHECK(rd(k, 0) == 0x55);
  wr(k, 4, 0xfe);
  CHECK(resets == 1);
  devices::I8042 k2(nullptr);
  k2.restore(k.save());
  CHECK_THROWS_AS(k2.restore(std::vector<uint8_t>{1, 2}), Error);
}
