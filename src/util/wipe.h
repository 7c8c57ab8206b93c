// Wiping secret bytes: explicit_bzero (which the compiler may not elide) over a buffer's whole
// capacity before it is freed or reused. Used on every copy of a credential value, host and
// guest side, so that freed heap memory does not keep it. SecretString, the type that holds a
// value, keeps its bytes in secret memory (util/secret_memory.h: pages of their own, not
// dumped, locked in RAM where allowed), wiped when freed.
#pragma once
#include <string.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "util/secret_memory.h"

namespace space {

// Zeroes the bytes of `s` (up to its capacity) and empties it.
template <class Alloc>
inline void wipe(std::basic_string<char, std::char_traits<char>, Alloc>& s) {
  s.resize(s.capacity());
  if (!s.empty()) ::explicit_bzero(s.data(), s.size());
  s.clear();
}
template <class Alloc>
inline void wipe(std::vector<uint8_t, Alloc>& v) {
  v.resize(v.capacity());
  if (!v.empty()) ::explicit_bzero(v.data(), v.size());
  v.clear();
}
inline void wipe(void* p, size_t n) {
  if (n) ::explicit_bzero(p, n);
}

// Appends `more` to `s`, which holds secret bytes: when `s` must grow, its bytes move to a new
// buffer of twice the capacity and the old buffer is wiped before it is freed. SecretBytes also
// leaves its short-string buffer for secret memory before it holds a byte.
template <class Alloc>
inline void append_wiped(std::basic_string<char, std::char_traits<char>, Alloc>& s,
                         std::string_view more) {
  const size_t least = std::is_same_v<Alloc, std::allocator<char>> ? 0 : kSecretMinCapacity;
  if (s.size() + more.size() > s.capacity() || s.capacity() < least) {
    std::basic_string<char, std::char_traits<char>, Alloc> bigger;
    bigger.reserve(std::max({s.capacity() * 2, s.size() + more.size(), least}));
    bigger.append(s);
    wipe(s);
    s.swap(bigger);
  }
  s.append(more);
}

// A string that holds a secret value: its bytes in secret memory, wiped when destroyed.
struct SecretString {
  SecretBytes bytes;
  SecretString() = default;
  // A copy of `b` in secret memory.
  explicit SecretString(std::string_view b) { append_wiped(bytes, b); }
  explicit SecretString(const char* b) : SecretString(std::string_view(b)) {}
  // A copy of `b` in secret memory; `b` is wiped.
  explicit SecretString(std::string&& b) : SecretString(std::string_view(b)) { wipe(b); }
  // `b`'s bytes, moved when they are in secret memory, else copied there and wiped.
  explicit SecretString(SecretBytes&& b) {
    if (b.capacity() >= kSecretMinCapacity) {
      bytes = std::move(b);
    } else {
      append_wiped(bytes, b);
      wipe(b);
    }
  }
  // An empty one with room for `n` bytes (at least kSecretMinCapacity) in secret memory.
  static SecretString reserved(size_t n) {
    SecretString s;
    s.bytes.reserve(std::max(n, kSecretMinCapacity));
    return s;
  }
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
  // The bytes, for reading.
  std::string_view view() const { return bytes; }
};

}  // namespace space
