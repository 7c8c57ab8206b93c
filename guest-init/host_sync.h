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
// touch its host's RNG or clock. Hostname: a restored or branched guest still has the hostname
// of the snapshot it came from; Hello names its sandbox, and apply() sets that as the hostname.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>

#include "console.h"
#include "proto/agent.h"
#include "util/fd.h"

namespace space::guest {

constexpr int64_t kMaxLagNs = 50'000'000;      // 50 ms
constexpr int64_t kMaxLeadNs = 1'000'000'000;  // 1 s

class HostSync {
 public:
  // Mixes in hello.entropy and steps the clock to hello.time_ns (unless 0). Thread-safe; never
  // throws; failures are logged to `con`.
  void apply(const proto::Hello& hello, const Console& con) noexcept;
  // Only the hostname of apply(): under gVisor the sandbox's RNG and clock are the host's.
  void apply_hostname(const proto::Hello& hello, const Console& con) noexcept;
  // The hostname the last apply() set, or `fallback` if none has yet.
  std::string hostname(const std::string& fallback) const;

 private:
  void add_entropy(const proto::Hello& hello, const Console& con) noexcept;
  void set_hostname(const std::string& name, const Console& con) noexcept;
  mutable std::mutex mu_;
  std::string hostname_;
  Fd urandom_;
  bool warned_ = false;
};

}  // namespace space::guest
