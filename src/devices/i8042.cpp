// i8042 model; see i8042.h.
#include "devices/i8042.h"

#include "proto/wire.h"
#include "util/error.h"

namespace space::devices {
namespace {
constexpr uint8_t kStatusOutputFull = 0x01;
constexpr uint8_t kStatusSystem = 0x04;
constexpr uint32_t kSaveVersion = 1;
}  // namespace

void I8042::read(uint64_t offset, std::span<uint8_t> data) {
  for (auto& b : data) {
    if (offset == 0) {
      b = out_ >= 0 ? static_cast<uint8_t>(out_) : 0;
      out_ = -1;
    } else if (offset == 4) {
      b = static_cast<uint8_t>(kStatusSystem | (out_ >= 0 ? kStatusOutputFull : 0));
    } else {
      b = 0xff;
    }
  }
}

void I8042::write(uint64_t offset, std::span<const uint8_t> data) {
  if (data.empty()) return;
  uint8_t v = data[0];
  if (offset == 0) {
    if (pending_cmd_ == 0x60) command_byte_ = v;
    pending_cmd_ = 0;
    return;
  }
  if (offset != 4) return;
  switch (v) {
    case 0x20:  // read command byte
      out_ = command_byte_;
      break;
    case 0x60:  // write command byte (next data byte)
    case 0xd1:  // write output port (next data byte)
      pending_cmd_ = v;
      break;
    case 0xaa:  // self test
      out_ = 0x55;
      break;
    case 0xfe:  // pulse reset line
      reset_ = true;
      if (on_reset_) on_reset_();
      break;
    default:
      break;
  }
}

std::vector<uint8_t> I8042::save() const {
  proto::Writer w;
  w.u32(kSaveVersion);
  w.u8(command_byte_);
  w.u8(pending_cmd_);
  w.i32(out_);
  return std::move(w.buffer());
}

void I8042::restore(std::span<const uint8_t> state) {
  try {
    proto::Reader r(state);
    if (r.u32() != kSaveVersion) fail("i8042: unsupported saved-state version");
    command_byte_ = r.u8();
    pending_cmd_ = r.u8();
    out_ = r.i32();
    r.finish();
    if (out_ < -1 || out_ > 255) fail("i8042: corrupt saved state");
  } catch (proto::ProtoError& e) {
    e.add_context("i8042: corrupt saved state");
    throw;
  }
}

}  // namespace space::devices
