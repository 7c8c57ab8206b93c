// AuditThrottle: how many audit lines a sandbox can make us write, bounded without losing count.
// The records it provokes cheaply (denials, failed requests) pass through admit(): a record is
// written on its own while the sandbox's token bucket has tokens (`burst` at once, then one every
// `period_ms`), and so is the first of each kind from that sandbox; the others are only counted,
// per sandbox and kind, and due() hands each count out once `window_ms` has passed since the
// first it holds, for the caller to write as one line (describe()). A kind is a short label from
// a fixed set the caller chooses (never text the guest wrote); past kMaxKinds kinds a sandbox's
// records count as "other". What the sandbox did legitimately (a fetch, a connection made) is not
// the throttle's: callers write those lines themselves. Not thread-safe.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "util/token_bucket.h"

namespace space {

class AuditThrottle {
 public:
  struct Limits {
    uint64_t burst = 20;        // records of a sandbox written at once
    uint64_t period_ms = 1000;  // then one every period
    uint64_t window_ms = 60'000;
  };
  static constexpr size_t kMaxKinds = 16;  // per sandbox; further kinds count as "other"

  explicit AuditThrottle(Limits l) : limits_(l) {}
  AuditThrottle() : AuditThrottle(Limits{}) {}

  // Whether the record of `kind` from `sandbox` at `now_ms` is to be written on its own; when
  // not, it has been counted.
  bool admit(const std::string& sandbox, const std::string& kind, uint64_t now_ms);

  // Records counted and not written, of one kind from one sandbox.
  struct Count {
    std::string sandbox, kind;
    uint64_t count = 0;
    uint64_t first_ms = 0;  // when the first of them came
  };
  // The counts whose window has passed at `now_ms`, removed; `all`: every count.
  std::vector<Count> due(uint64_t now_ms, bool all = false);
  // Records counted and not yet handed out by due().
  uint64_t pending() const;

  // "denied 4980 requests of kind 'not granted' from sandbox q1 in the last 60 s (not audited one
  // by one)", `verb` being what happened to them.
  static std::string describe(const Count& c, std::string_view verb, uint64_t now_ms);

 private:
  struct Sandbox {
    explicit Sandbox(const Limits& l) : bucket(l.burst, l.period_ms) {}
    TokenBucket bucket;
    std::set<std::string> seen;            // kinds written on their own since it was quiet
    std::map<std::string, Count> counted;  // by kind
    uint64_t last_ms = 0;
  };
  Limits limits_;
  std::map<std::string, Sandbox> sandboxes_;
};

}  // namespace space
