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

std::vector<uint8_t> Hello::encode() const {
  Writer w;
  w.u32(version);
  w.str(client);
  w.raw(entropy);
  w.u64(time_ns);
  w.str(sandbox);
  w.u32(flags);
  return std::move(w.buffer());
}

Hello Hello::decode(std::span<const uint8_t> p) {
  Reader r(p);
  Hello h;
  h.version = r.u32();
  if (h.version != kVersion) return h;
  h.client = r.str();
  auto e = r.raw(kEntropySize);
  std::copy(e.begin(), e.end(), h.entropy.begin());
  h.time_ns = r.u64();
  h.sandbox = r.str();
  h.flags = r.u32();
  if (h.flags & ~(kImage | kNetwork)) throw ProtoError("unknown Hello flags");
  r.finish();
  return h;
}

std::vector<uint8_t> HelloReply::encode() const {
  Writer w;
  w.u32(version);
  w.str(agent);
  w.str(hostname);
  w.u64(uptime_ms);
  return std::move(w.buffer());
}

HelloReply HelloReply::decode(std::span<const uint8_t> p) {
  Reader r(p);
  HelloReply h;
  h.version = r.u32();
  h.agent = r.str();
  h.hostname = r.str();
  h.uptime_ms = r.u64();
  r.finish();
  return h;
}

std::vector<uint8_t> ErrorMsg::encode() const {
  Writer w;
  w.str(message);
  return std::move(w.buffer());
}

ErrorMsg ErrorMsg::decode(std::span<const uint8_t> p) {
  Reader r(p);
  ErrorMsg e;
  e.message = r.str();
  r.finish();
  return e;
}

}  // namespace space::proto
