// Unit tests for util/base64: round trips of any bytes, non-canonical text refused, and the
// in-place encoder secret buffers use.
#include <doctest/doctest.h>

#include <string>

#include "util/base64.h"

using namespace space;
using base64::decode;
using base64::encode;

TEST_CASE("base64 round-trips any bytes and refuses non-canonical text") {
  for (std::string s : {std::string(), std::string("a"), std::string("ab"), std::string("abc"),
                        std::string("\0\xff\x10 secret\n", 11)}) {
    auto e = encode(s);
    CHECK(e.size() % 4 == 0);
    CHECK(decode(e) == s);
  }
  CHECK(encode("hunter2") == "aHVudGVyMg==");
  CHECK_FALSE(decode("aHVudGVyMg="));   // length
  CHECK_FALSE(decode("aHVu dGVy"));     // whitespace
  CHECK_FALSE(decode("aHVudGVyMh=="));  // non-zero padding bits
  CHECK_FALSE(decode("a=bc"));
}

TEST_CASE("base64: encode_into appends exactly encoded_size bytes, without reallocating") {
  for (size_t n = 0; n < 10; n++) {
    std::string in(n, '\x5a');
    std::string out = "x";
    out.reserve(1 + base64::encoded_size(n));
    const char* before = out.data();
    base64::encode_into(out, in);
    CHECK(out.size() == 1 + base64::encoded_size(n));
    CHECK(out.data() == before);  // no reallocation: a secret leaves no copy behind
    CHECK(out.substr(1) == encode(in));
  }
}
