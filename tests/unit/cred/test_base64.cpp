// Unit tests for cred/base64: round trips of any bytes, and non-canonical text refused.
#include <doctest/doctest.h>

#include <string>

#include "cred/base64.h"

using namespace space;
using namespace space::cred;

TEST_CASE("base64 round-trips any bytes and refuses non-canonical text") {
  for (std::string s : {std::string(), std::string("a"), std::string("ab"), std::string("abc"),
                        std::string("\0\xff\x10 secret\n", 11)}) {
    auto e = base64_encode(s);
    CHECK(e.size() % 4 == 0);
    CHECK(base64_decode(e) == s);
  }
  CHECK(base64_encode("hunter2") == "aHVudGVyMg==");
  CHECK_FALSE(base64_decode("aHVudGVyMg="));   // length
  CHECK_FALSE(base64_decode("aHVu dGVy"));     // whitespace
  CHECK_FALSE(base64_decode("aHVudGVyMh=="));  // non-zero padding bits
  CHECK_FALSE(base64_decode("a=bc"));
}
