// HostSync: what guest-init does with the entropy and the wall-clock time every Hello carries.
// A guest restored from a snapshot wakes with the RNG state and the clock of the moment the
// snapshot was taken; since every host request opens with Hello, refreshing both on each Hello
// means no request is ever served with a replayed RNG or a stale clock, at no extra round trip.
// Entropy: ioctl(RNDADDENTROPY) on /dev/urandom (opened on first use and kept open), then
// ioctl(RNDRESEEDCRNG) so the kernel's CRNG uses it at once. Clock: CLOCK_REALTIME is stepped
// to the host's time when it is behind by more than kMaxLagNs. The host's time is already old
// when it arrives (the trip through the VMM takes tens of ms on a loaded PVM host), so a guest
// that looks ahead is usually right: it is stepped back only beyond kMaxLeadNs. A restored
// snapshot is always behind. PID 1 only: in the --serve-unix test mode guest-init must not
// touch its host's RNG or clock.
#pragma once
#include <cstdint>
#include <mutex>

#include "console.h"
#include "proto/agent.h"
#include "util/fd.h"

namespace space::guest {

constexpr int64_t kMaxLagNs = 50'000'000;     // 50 ms
constexpr int64_t kMaxLeadNs = 1'000'000'000;  // 1 s

class HostSync {
 public:
  // Mixes in hello.entropy and steps the clock to hello.time_ns (unless 0). Thread-safe; never
  // throws; failures are logged to `con`.
  void apply(const proto::Hello& hello, const Console& con) noexcept;

 private:
  void add_entropy(const proto::Hello& hello, const Console& con) noexcept;
  std::mutex mu_;
  Fd urandom_;
  bool warned_ = false;
};

}  // namespace space::guest
