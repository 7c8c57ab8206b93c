// Milliseconds for deadlines and audit times: CLOCK_MONOTONIC for anything measured or waited
// on (it never jumps), CLOCK_REALTIME only for timestamps a person reads.
#pragma once
#include <time.h>

#include <cstdint>

namespace space::timing {

// Milliseconds on CLOCK_MONOTONIC.
inline int64_t mono_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

// Milliseconds since the epoch (CLOCK_REALTIME).
inline uint64_t wall_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1'000'000;
}

}  // namespace space::timing
