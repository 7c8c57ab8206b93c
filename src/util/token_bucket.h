// TokenBucket: a rate limit of one event every `period_ms`, with bursts of up to `burst` events,
// on the caller's millisecond clock (so that tests drive it). Tokens are kept in thousandths, so
// a partly elapsed period counts. Not thread-safe: callers that share one lock around it.
#pragma once
#include <algorithm>
#include <cstdint>

namespace space {

class TokenBucket {
 public:
  TokenBucket(uint64_t burst, uint64_t period_ms)
      : cap_milli_(burst * 1000),
        period_ms_(std::max<uint64_t>(period_ms, 1)),
        milli_(cap_milli_) {}

  // Takes one token at `now_ms` if there is one.
  bool take(uint64_t now_ms) {
    if (!started_) {
      started_ = true;
      last_ms_ = now_ms;
    }
    if (now_ms > last_ms_) {
      milli_ = std::min(cap_milli_, milli_ + (now_ms - last_ms_) * 1000 / period_ms_);
      last_ms_ = now_ms;
    }
    if (milli_ < 1000) return false;
    milli_ -= 1000;
    return true;
  }

 private:
  uint64_t cap_milli_;
  uint64_t period_ms_;
  uint64_t milli_;
  uint64_t last_ms_ = 0;
  bool started_ = false;
};

}  // namespace space
