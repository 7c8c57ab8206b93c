// Unit tests for util/crc32: the standard check value, and a CRC fed in pieces.
#include <doctest/doctest.h>

#include <cstdint>
#include <span>

#include "util/crc32.h"

using namespace space;

TEST_CASE("crc32: standard check value, incremental") {
  const char* s = "123456789";
  auto b = std::span(reinterpret_cast<const uint8_t*>(s), 9);
  CHECK(crc32(b) == 0xCBF43926u);
  CHECK(crc32(b.subspan(4), crc32(b.first(4))) == 0xCBF43926u);
  CHECK(crc32({}) == 0);
}
