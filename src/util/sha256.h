// SHA-256 (FIPS 180-4), for the content digests of images (OCI blob and manifest digests are
// "sha256:<hex>"). Streaming: update() any number of times, then hex() once. Our own small
// implementation, so that checking a digest does not load a crypto library into every process.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace space {

class Sha256 {
 public:
  Sha256();
  void update(std::span<const uint8_t> data);
  void update(std::string_view s) {
    update({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  }
  // The digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> digest();
  // The digest as 64 lower-case hex digits.
  std::string hex();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t used_ = 0;
  uint64_t total_ = 0;
};

// Hex SHA-256 of the file `fd` refers to, read from its current offset to the end.
std::string sha256_fd(int fd);

}  // namespace space
