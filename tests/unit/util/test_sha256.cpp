// Unit tests for SHA-256: the FIPS 180-4 example vectors, split updates, and sha256_fd.
#include <doctest/doctest.h>
#include <fcntl.h>

#include "support/temp_dir.h"
#include "util/fs.h"
#include "util/sha256.h"

using namespace space;

namespace {
std::string sha(std::string_view s) {
  Sha256 h;
  h.update(s);
  return h.hex();
}
}  // namespace

TEST_CASE("sha256: known vectors") {
  CHECK(sha("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256: any split of the input gives the same digest; padding edges") {
  std::string data(300, '\0');
  for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<char>(i * 7);
  const std::string whole = sha(data);
  for (size_t cut : {0, 1, 55, 56, 63, 64, 65, 128, 299, 300}) {
    Sha256 h;
    h.update(std::string_view(data).substr(0, cut));
    h.update(std::string_view(data).substr(cut));
    CHECK(h.hex() == whole);
  }
  // Lengths around the 56-byte padding boundary all differ from each other.
  CHECK(sha(std::string(55, 'x')) != sha(std::string(56, 'x')));
  CHECK(sha(std::string(56, 'x')) != sha(std::string(57, 'x')));
}

TEST_CASE("sha256: of a file descriptor") {
  test::TempDir d("sha");
  fs::write_file_atomic(d.path + "/f", "abc");
  Fd fd(::open((d.path + "/f").c_str(), O_RDONLY | O_CLOEXEC));
  CHECK(sha256_fd(fd.get()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
