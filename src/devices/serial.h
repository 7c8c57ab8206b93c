// Serial: a 16550A UART (COM1, ports 0x3f8-0x3ff, IRQ 4) whose transmitter writes straight to
// an output fd (the sandbox's console.log). Transmission is instant, so THR is always empty;
// what matters is the interrupt: Linux's 8250 driver sends user-space output only from its
// THRE interrupt, so the UART raises IRQ 4 whenever an enabled interrupt becomes pending and
// reports it in IIR. The console takes no input: the receiver is fed only in loopback mode, which
// (with the scratch register) is modelled because the driver's probe checks it.
// Everything the guest controls is bounded: the receive FIFO holds 16 bytes (more sets the
// overrun bit, as on the chip), and the output file keeps at most max_output bytes, restarting
// with a marker line when full (util/capped_writer.h).
#pragma once
#include <cstdint>
#include <vector>

#include "devices/device.h"
#include "proto/fields.h"
#include "util/capped_writer.h"

namespace space::devices {

class Serial : public Device {
 public:
  static constexpr uint16_t kCom1Base = 0x3f8;
  static constexpr uint32_t kCom1Irq = 4;
  static constexpr size_t kFifoSize = 16;
  static constexpr uint64_t kDefaultMaxOutput = 16ull << 20;

  // `out_fd` receives transmitted bytes (not owned; O_APPEND); `irq` is IRQ 4 (not owned).
  Serial(IrqLine& irq, int out_fd, uint64_t max_output = kDefaultMaxOutput)
      : irq_(irq), out_(out_fd, max_output) {}
  std::string name() const override { return "serial"; }
  void read(uint64_t offset, std::span<uint8_t> data) override;
  void write(uint64_t offset, std::span<const uint8_t> data) override;
  std::vector<uint8_t> save() const override;
  void restore(std::span<const uint8_t> state) override;

  // What save() keeps: the registers, the pending interrupt and the receive FIFO.
  struct State {
    static constexpr uint32_t kVersion = 1;
    uint32_t version = kVersion;
    uint8_t ier = 0, lcr = 0, mcr = 0x08, lsr = 0x60, msr = 0xb0, scr = 0, dll = 0x0c, dlm = 0,
            fcr = 0;
    bool thre_pending = false;  // THR-empty interrupt pending (cleared by reading IIR)
    bool irq_level = false;
    std::vector<uint8_t> rx;  // the receive FIFO, oldest first
    SPACE_FIELDS(version, ier, lcr, mcr, lsr, msr, scr, dll, dlm, fcr, thre_pending, irq_level,
                 (rx, proto::Max{kFifoSize}));
    void check() const;
  };

 private:
  uint8_t read_reg(uint8_t reg);
  void write_reg(uint8_t reg, uint8_t v);
  uint8_t iir() const;
  void update_irq();
  void receive(uint8_t b);

  IrqLine& irq_;
  CappedWriter out_;
  State s_;
  bool overrun_ = false;  // LSR.OE: a byte arrived with the FIFO full (cleared by reading LSR)
};

}  // namespace space::devices
