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

// Nanoseconds on CLOCK_MONOTONIC: the same clock in every process of the host (no time namespace
// is made), so one process's reading may be compared with another's.
inline int64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Milliseconds since the epoch (CLOCK_REALTIME).
inline uint64_t wall_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1'000'000;
}

}  // namespace space::timing
