// Wire primitives shared by host and guest: a Writer that appends little-endian integers,
// strings and byte blobs to a buffer, and a Reader that takes them back out with every length
// checked against what remains. A Reader never reads past its span; malformed input throws
// ProtoError, a space::Error (so main() and every `catch (const Error&)` take it as any other),
// which callers turn into a failed request, never a crash.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/error.h"

namespace space::proto {

struct ProtoError : Error {
  using Error::Error;
};

class Writer {
 public:
  void u8(uint8_t v) { buf_.push_back(v); }
  void u16(uint16_t v) { put(&v, 2); }
  void u32(uint32_t v) { put(&v, 4); }
  void u64(uint64_t v) { put(&v, 8); }
  void i32(int32_t v) { put(&v, 4); }
  // u32 length, then the bytes.
  void bytes(std::span<const uint8_t> b) {
    u32(static_cast<uint32_t>(b.size()));
    put(b.data(), b.size());
  }
  void str(const std::string& s) { bytes({reinterpret_cast<const uint8_t*>(s.data()), s.size()}); }
  // The bytes alone, no length: for fixed-size fields.
  void raw(std::span<const uint8_t> b) { put(b.data(), b.size()); }
  // u32 count, then each string.
  void strs(const std::vector<std::string>& v) {
    u32(static_cast<uint32_t>(v.size()));
    for (auto& s : v) str(s);
  }
  std::vector<uint8_t>& buffer() { return buf_; }

 private:
  void put(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  std::vector<uint8_t> buf_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  uint8_t u8() { return get<uint8_t>(); }
  uint16_t u16() { return get<uint16_t>(); }
  uint32_t u32() { return get<uint32_t>(); }
  uint64_t u64() { return get<uint64_t>(); }
  int32_t i32() { return get<int32_t>(); }
  std::span<const uint8_t> bytes() {
    uint32_t n = u32();
    need(n);
    auto s = in_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  // Exactly `n` bytes with no length prefix: a fixed-size field.
  std::span<const uint8_t> raw(size_t n) {
    need(n);
    auto s = in_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  std::string str() {
    auto b = bytes();
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  // Reads a string list of at most `max_count` entries.
  std::vector<std::string> strs(uint32_t max_count) {
    uint32_t n = u32();
    if (n > max_count) throw ProtoError("too many strings in list");
    std::vector<std::string> v;
    v.reserve(n);
    for (uint32_t i = 0; i < n; i++) v.push_back(str());
    return v;
  }
  size_t remaining() const { return in_.size() - pos_; }
  // Throws unless every byte was consumed.
  void finish() const {
    if (remaining() != 0) throw ProtoError("trailing bytes in message");
  }

 private:
  void need(size_t n) const {
    if (n > remaining()) throw ProtoError("message truncated");
  }
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

}  // namespace space::proto
