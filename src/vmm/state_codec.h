// Helpers for encoding KVM's fixed-layout state structs (kvm_regs, kvm_irqchip, ...) in snapshot
// sections: a struct travels as a length-prefixed byte blob, and decoding insists the length is
// exactly sizeof(T), so a snapshot written against another struct layout is refused rather than
// misread. Built on proto::Writer/Reader; errors are proto::ProtoError.
#pragma once
#include <cstring>
#include <span>
#include <string>
#include <type_traits>

#include "proto/wire.h"

namespace space::vmm::codec {

// Appends `v` as a blob of sizeof(T) bytes.
template <class T>
void put_pod(proto::Writer& w, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  w.bytes({reinterpret_cast<const uint8_t*>(&v), sizeof(T)});
}

// Reads a blob that must be exactly sizeof(T) bytes into `out`; `what` names it in errors.
template <class T>
void get_pod(proto::Reader& r, T& out, const char* what) {
  static_assert(std::is_trivially_copyable_v<T>);
  auto b = r.bytes();
  if (b.size() != sizeof(T))
    throw proto::ProtoError(std::string(what) + ": " + std::to_string(b.size()) +
                            " bytes, expected " + std::to_string(sizeof(T)));
  std::memcpy(&out, b.data(), sizeof(T));
}

// Reads a count and checks it against `max`.
inline uint32_t get_count(proto::Reader& r, uint32_t max, const char* what) {
  uint32_t n = r.u32();
  if (n > max)
    throw proto::ProtoError(std::string(what) + ": count " + std::to_string(n) + " exceeds " +
                            std::to_string(max));
  return n;
}

}  // namespace space::vmm::codec
