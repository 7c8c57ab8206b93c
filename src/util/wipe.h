// Wiping secret bytes: explicit_bzero (which the compiler may not elide) over a buffer's whole
// capacity before it is freed or reused. Used on every copy of a credential value, host and
// guest side, so that freed heap memory does not keep it.
#pragma once
#include <string.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace space {

// Zeroes the bytes of `s` (up to its capacity) and empties it.
inline void wipe(std::string& s) {
  s.resize(s.capacity());
  if (!s.empty()) ::explicit_bzero(s.data(), s.size());
  s.clear();
}
inline void wipe(std::vector<uint8_t>& v) {
  v.resize(v.capacity());
  if (!v.empty()) ::explicit_bzero(v.data(), v.size());
  v.clear();
}
inline void wipe(void* p, size_t n) {
  if (n) ::explicit_bzero(p, n);
}

// Appends `more` to `s`, which holds secret bytes: when `s` must grow, its bytes move to a new
// buffer of twice the capacity and the old buffer is wiped before it is freed.
inline void append_wiped(std::string& s, std::string_view more) {
  if (s.size() + more.size() > s.capacity()) {
    std::string bigger;
    bigger.reserve(std::max(s.capacity() * 2, s.size() + more.size()));
    bigger.append(s);
    wipe(s);
    s.swap(bigger);
  }
  s.append(more);
}

// A string that wipes itself when destroyed.
struct SecretString {
  std::string bytes;
  SecretString() = default;
  explicit SecretString(std::string b) : bytes(std::move(b)) {}
  SecretString(SecretString&& o) noexcept : bytes(std::move(o.bytes)) {}
  SecretString& operator=(SecretString&& o) noexcept {
    if (this != &o) {
      wipe(bytes);
      bytes = std::move(o.bytes);
    }
    return *this;
  }
  SecretString(const SecretString&) = delete;
  SecretString& operator=(const SecretString&) = delete;
  ~SecretString() { wipe(bytes); }
};

}  // namespace space
