// 16550A UART model; see serial.h. Register semantics per the National/TI 16550 datasheet.
#include "devices/serial.h"

#include <unistd.h>

#include "util/error.h"

namespace space::devices {
namespace {
constexpr uint8_t kIerRdi = 0x01, kIerThri = 0x02, kIerRlsi = 0x04;
constexpr uint8_t kLcrDlab = 0x80;
constexpr uint8_t kMcrLoop = 0x10;
constexpr uint8_t kLsrDr = 0x01, kLsrOe = 0x02, kLsrThre = 0x20, kLsrTemt = 0x40;
constexpr uint8_t kIirNone = 0x01, kIirThri = 0x02, kIirRdi = 0x04;
constexpr uint8_t kFcrEnable = 0x01;
}  // namespace

uint8_t Serial::iir() const {
  uint8_t fifo = (s_.fcr & kFcrEnable) ? 0xc0 : 0;
  if ((s_.ier & kIerRdi) && !s_.rx.empty()) return fifo | kIirRdi;
  if ((s_.ier & kIerThri) && s_.thre_pending) return fifo | kIirThri;
  return fifo | kIirNone;
}

void Serial::update_irq() {
  bool level = (iir() & 0x0f) != kIirNone;
  if (level == s_.irq_level) return;
  s_.irq_level = level;
  irq_.set_level(level);
}

void Serial::read(uint64_t offset, std::span<uint8_t> data) {
  for (size_t i = 0; i < data.size(); i++) data[i] = read_reg(static_cast<uint8_t>(offset + i));
}

void Serial::write(uint64_t offset, std::span<const uint8_t> data) {
  for (size_t i = 0; i < data.size(); i++) write_reg(static_cast<uint8_t>(offset + i), data[i]);
}

uint8_t Serial::read_reg(uint8_t reg) {
  switch (reg) {
    case 0: {
      if (s_.lcr & kLcrDlab) return s_.dll;
      if (s_.rx.empty()) return 0;
      uint8_t b = s_.rx.front();
      s_.rx.erase(s_.rx.begin());
      update_irq();
      return b;
    }
    case 1:
      return (s_.lcr & kLcrDlab) ? s_.dlm : s_.ier;
    case 2: {
      uint8_t v = iir();
      if ((v & 0x0f) == kIirThri) {
        s_.thre_pending = false;
        update_irq();
      }
      return v;
    }
    case 3:
      return s_.lcr;
    case 4:
      return s_.mcr;
    case 5: {
      uint8_t v = kLsrThre | kLsrTemt | (s_.rx.empty() ? 0 : kLsrDr) | (overrun_ ? kLsrOe : 0);
      overrun_ = false;
      return v;
    }
    case 6:
      if (s_.mcr & kMcrLoop) {
        // Loopback: DTR->DSR, RTS->CTS, OUT1->RI, OUT2->DCD.
        uint8_t m = 0;
        if (s_.mcr & 0x01) m |= 0x20;
        if (s_.mcr & 0x02) m |= 0x10;
        if (s_.mcr & 0x04) m |= 0x40;
        if (s_.mcr & 0x08) m |= 0x80;
        return m;
      }
      return s_.msr;
    case 7:
      return s_.scr;
    default:
      return 0xff;
  }
}

void Serial::write_reg(uint8_t reg, uint8_t v) {
  switch (reg) {
    case 0:
      if (s_.lcr & kLcrDlab) {
        s_.dll = v;
        return;
      }
      if (s_.mcr & kMcrLoop) {
        receive(v);
      } else {
        out_.write({reinterpret_cast<const char*>(&v), 1});  // console output is best effort
      }
      s_.thre_pending = true;
      update_irq();
      return;
    case 1:
      if (s_.lcr & kLcrDlab) {
        s_.dlm = v;
        return;
      }
      // Enabling THRI while THR is empty makes the THRE interrupt pending at once.
      if ((v & kIerThri) && !(s_.ier & kIerThri)) s_.thre_pending = true;
      s_.ier = v & 0x0f;
      update_irq();
      return;
    case 2:
      s_.fcr = v;
      if (v & 0x02) s_.rx.clear();
      update_irq();
      return;
    case 3:
      s_.lcr = v;
      return;
    case 4:
      s_.mcr = v & 0x1f;
      return;
    case 7:
      s_.scr = v;
      return;
    default:
      return;
  }
  (void)kIerRlsi;
}

void Serial::receive(uint8_t b) {
  if (s_.rx.size() >= kFifoSize) {
    overrun_ = true;
    return;
  }
  s_.rx.push_back(b);
}

void Serial::State::check() const {
  if (version != kVersion) fail("serial: unsupported saved-state version");
}

std::vector<uint8_t> Serial::save() const {
  return proto::encode_fields(s_);
}

void Serial::restore(std::span<const uint8_t> state) {
  try {
    s_ = proto::decode_fields<State>(state);
  } catch (proto::ProtoError& e) {
    e.add_context("serial: corrupt saved state");
    throw;
  }
}

}  // namespace space::devices
