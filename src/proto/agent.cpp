// Frame codec and message (de)serialisation for the agent protocol; see agent.h.
#include "proto/agent.h"

#include <algorithm>
#include <cstring>

namespace space::proto {

std::vector<uint8_t> encode_frame(Type type, std::span<const uint8_t> payload) {
  if (payload.size() > kMaxPayload) throw ProtoError("frame payload too large");
  Writer w;
  w.u32(static_cast<uint32_t>(payload.size()));
  w.u16(static_cast<uint16_t>(type));
  w.u16(0);
  auto& b = w.buffer();
  b.insert(b.end(), payload.begin(), payload.end());
  return std::move(b);
}

void FrameDecoder::check_header() const {
  if (buf_.size() < kHeaderSize) return;
  uint32_t len;
  uint16_t reserved;
  std::memcpy(&len, buf_.data(), 4);
  std::memcpy(&reserved, buf_.data() + 6, 2);
  if (len > kMaxPayload) throw ProtoError("frame length " + std::to_string(len) + " too large");
  if (reserved != 0) throw ProtoError("frame header reserved field is not zero");
}

void FrameDecoder::feed(std::span<const uint8_t> data) {
  buf_.insert(buf_.end(), data.begin(), data.end());
  check_header();
}

std::optional<Frame> FrameDecoder::next() {
  if (buf_.size() < kHeaderSize) return std::nullopt;
  check_header();
  uint32_t len;
  uint16_t type;
  std::memcpy(&len, buf_.data(), 4);
  std::memcpy(&type, buf_.data() + 4, 2);
  if (buf_.size() < kHeaderSize + len) return std::nullopt;
  Frame f;
  f.type = static_cast<Type>(type);
  f.payload.assign(buf_.begin() + kHeaderSize, buf_.begin() + kHeaderSize + len);
  buf_.erase(buf_.begin(), buf_.begin() + kHeaderSize + len);
  check_header();
  return f;
}

void Hello::check() const {
  if (flags & ~(kImage | kNetwork)) throw ProtoError("unknown Hello flags");
}

Hello Hello::decode(std::span<const uint8_t> p) {
  Reader r(p);
  Hello h;
  h.version = r.u32();
  if (h.version != kVersion) return h;
  return decode_fields<Hello>(p);
}

}  // namespace space::proto
