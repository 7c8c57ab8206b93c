// 16550A UART model; see serial.h. Register semantics per the National/TI 16550 datasheet.
#include "devices/serial.h"

#include <unistd.h>

#include "proto/wire.h"
#include "util/error.h"

namespace space::devices {
namespace {
constexpr uint8_t kIerRdi = 0x01, kIerThri = 0x02, kIerRlsi = 0x04;
constexpr uint8_t kLcrDlab = 0x80;
constexpr uint8_t kMcrLoop = 0x10;
constexpr uint8_t kLsrDr = 0x01, kLsrOe = 0x02, kLsrThre = 0x20, kLsrTemt = 0x40;
constexpr uint8_t kIirNone = 0x01, kIirThri = 0x02, kIirRdi = 0x04;
constexpr uint8_t kFcrEnable = 0x01;
constexpr uint32_t kSaveVersion = 1;
}  // namespace

uint8_t Serial::iir() const {
  uint8_t fifo = (fcr_ & kFcrEnable) ? 0xc0 : 0;
  if ((ier_ & kIerRdi) && !rx_.empty()) return fifo | kIirRdi;
  if ((ier_ & kIerThri) && thre_pending_) return fifo | kIirThri;
  return fifo | kIirNone;
}

void Serial::update_irq() {
  bool level = (iir() & 0x0f) != kIirNone;
  if (level == irq_level_) return;
  irq_level_ = level;
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
      if (lcr_ & kLcrDlab) return dll_;
      if (rx_.empty()) return 0;
      uint8_t b = rx_.front();
      rx_.pop_front();
      update_irq();
      return b;
    }
    case 1:
      return (lcr_ & kLcrDlab) ? dlm_ : ier_;
    case 2: {
      uint8_t v = iir();
      if ((v & 0x0f) == kIirThri) {
        thre_pending_ = false;
        update_irq();
      }
      return v;
    }
    case 3:
      return lcr_;
    case 4:
      return mcr_;
    case 5: {
      uint8_t v = kLsrThre | kLsrTemt | (rx_.empty() ? 0 : kLsrDr) | (overrun_ ? kLsrOe : 0);
      overrun_ = false;
      return v;
    }
    case 6:
      if (mcr_ & kMcrLoop) {
        // Loopback: DTR->DSR, RTS->CTS, OUT1->RI, OUT2->DCD.
        uint8_t m = 0;
        if (mcr_ & 0x01) m |= 0x20;
        if (mcr_ & 0x02) m |= 0x10;
        if (mcr_ & 0x04) m |= 0x40;
        if (mcr_ & 0x08) m |= 0x80;
        return m;
      }
      return msr_;
    case 7:
      return scr_;
    default:
      return 0xff;
  }
}

void Serial::write_reg(uint8_t reg, uint8_t v) {
  switch (reg) {
    case 0:
      if (lcr_ & kLcrDlab) {
        dll_ = v;
        return;
      }
      if (mcr_ & kMcrLoop) {
        receive(v);
      } else {
        out_.write({reinterpret_cast<const char*>(&v), 1});  // console output is best effort
      }
      thre_pending_ = true;
      update_irq();
      return;
    case 1:
      if (lcr_ & kLcrDlab) {
        dlm_ = v;
        return;
      }
      // Enabling THRI while THR is empty makes the THRE interrupt pending at once.
      if ((v & kIerThri) && !(ier_ & kIerThri)) thre_pending_ = true;
      ier_ = v & 0x0f;
      update_irq();
      return;
    case 2:
      fcr_ = v;
      if (v & 0x02) rx_.clear();
      update_irq();
      return;
    case 3:
      lcr_ = v;
      return;
    case 4:
      mcr_ = v & 0x1f;
      return;
    case 7:
      scr_ = v;
      return;
    default:
      return;
  }
  (void)kIerRlsi;
}

void Serial::receive(uint8_t b) {
  if (rx_.size() >= kFifoSize) {
    overrun_ = true;
    return;
  }
  rx_.push_back(b);
}

std::vector<uint8_t> Serial::save() const {
  proto::Writer w;
  w.u32(kSaveVersion);
  for (uint8_t r : {ier_, lcr_, mcr_, lsr_, msr_, scr_, dll_, dlm_, fcr_}) w.u8(r);
  w.u8(thre_pending_);
  w.u8(irq_level_);
  std::vector<uint8_t> rx(rx_.begin(), rx_.end());
  w.bytes(rx);
  return std::move(w.buffer());
}

void Serial::restore(std::span<const uint8_t> state) {
  try {
    proto::Reader r(state);
    if (r.u32() != kSaveVersion) fail("serial: unsupported saved-state version");
    for (uint8_t* p : {&ier_, &lcr_, &mcr_, &lsr_, &msr_, &scr_, &dll_, &dlm_, &fcr_}) *p = r.u8();
    thre_pending_ = r.u8() != 0;
    irq_level_ = r.u8() != 0;
    auto rx = r.bytes();
    if (rx.size() > kFifoSize) fail("serial: saved receive FIFO holds more than 16 bytes");
    rx_.assign(rx.begin(), rx.end());
    r.finish();
  } catch (proto::ProtoError& e) {
    e.add_context("serial: corrupt saved state");
    throw;
  }
}

}  // namespace space::devices
