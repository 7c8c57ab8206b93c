// Orderly end of the guest, run by the event loop (main thread) after a Poweroff request:
// sync; SIGTERM to every process and up to kTermGraceMs for them to exit (reaping meanwhile);
// SIGKILL to the rest; sync; remount / read-only; reboot(RB_AUTOBOOT). The kernel runs with
// reboot=k, so the restart is an i8042 reset (port 0x64 <- 0xFE), which the VMM takes as "the VM
// ended". If reboot() returns, guest-init writes that port itself.
#pragma once
#include "context.h"

namespace space::guest {

constexpr int kTermGraceMs = 2000;
constexpr int kKillGraceMs = 1000;
// Lets the vsock transport flush the Ack before the machine goes away.
constexpr int kAckFlushMs = 20;

// PID 1 only. Never returns: if even the port write fails, it reaps forever.
[[noreturn]] void power_off(Context& ctx, int signal_fd) noexcept;
// Reaps children forever, waking only on SIGCHLD. PID 1's last resort after a fatal error.
[[noreturn]] void reap_forever() noexcept;

}  // namespace space::guest
