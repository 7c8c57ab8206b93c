// i8042 model; see i8042.h.
#include "devices/i8042.h"

#include "util/error.h"

namespace space::devices {
namespace {
constexpr uint8_t kStatusOutputFull = 0x01;
constexpr uint8_t kStatusSystem = 0x04;
}  // namespace

void I8042::read(uint64_t offset, std::span<uint8_t> data) {
  for (auto& b : data) {
    if (offset == 0) {
      b = s_.out >= 0 ? static_cast<uint8_t>(s_.out) : 0;
      s_.out = -1;
    } else if (offset == 4) {
      b = static_cast<uint8_t>(kStatusSystem | (s_.out >= 0 ? kStatusOutputFull : 0));
    } else {
      b = 0xff;
    }
  }
}

void I8042::write(uint64_t offset, std::span<const uint8_t> data) {
  if (data.empty()) return;
  uint8_t v = data[0];
  if (offset == 0) {
    if (s_.pending_cmd == 0x60) s_.command_byte = v;
    s_.pending_cmd = 0;
    return;
  }
  if (offset != 4) return;
  switch (v) {
    case 0x20:  // read command byte
      s_.out = s_.command_byte;
      break;
    case 0x60:  // write command byte (next data byte)
    case 0xd1:  // write output port (next data byte)
      s_.pending_cmd = v;
      break;
    case 0xaa:  // self test
      s_.out = 0x55;
      break;
    case 0xfe:  // pulse reset line
      if (on_reset_) on_reset_();
      break;
    default:
      break;
  }
}

void I8042::State::check() const {
  if (version != kVersion) fail("i8042: unsupported saved-state version");
  if (out < -1 || out > 255) fail("i8042: corrupt saved state");
}

std::vector<uint8_t> I8042::save() const {
  return proto::encode_fields(s_);
}

void I8042::restore(std::span<const uint8_t> state) {
  try {
    s_ = proto::decode_fields<State>(state);
  } catch (proto::ProtoError& e) {
    e.add_context("i8042: corrupt saved state");
    throw;
  }
}

}  // namespace space::devices
