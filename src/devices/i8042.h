// I8042: the PS/2 controller at ports 0x60 (data) and 0x64 (status/command), modelled only as
// far as a kernel without a keyboard driver uses it: the status register reads "empty", a few
// controller commands answer, and command 0xFE (pulse the reset line) ends the VM. With
// `reboot=k` this is how the guest reboots or powers off; the VMM treats it as "guest stopped".
#pragma once
#include <cstdint>
#include <functional>

#include "devices/device.h"
#include "proto/fields.h"

namespace space::devices {

class I8042 : public Device {
 public:
  static constexpr uint16_t kDataPort = 0x60;
  static constexpr uint16_t kCommandPort = 0x64;

  // `on_reset` runs (on the vCPU thread) when the guest pulses the reset line.
  explicit I8042(std::function<void()> on_reset) : on_reset_(std::move(on_reset)) {}
  std::string name() const override { return "i8042"; }
  // Offsets are from port 0x60: 0 = data, 4 = status/command.
  void read(uint64_t offset, std::span<uint8_t> data) override;
  void write(uint64_t offset, std::span<const uint8_t> data) override;
  std::vector<uint8_t> save() const override;
  void restore(std::span<const uint8_t> state) override;

  // What save() keeps.
  struct State {
    static constexpr uint32_t kVersion = 1;
    uint32_t version = kVersion;
    uint8_t command_byte = 0x45;
    uint8_t pending_cmd = 0;  // command waiting for its data byte
    int32_t out = -1;         // byte waiting in the output buffer, or -1
    SPACE_FIELDS(version, command_byte, pending_cmd, out);
    void check() const;
  };

 private:
  std::function<void()> on_reset_;
  State s_;
};

}  // namespace space::devices
