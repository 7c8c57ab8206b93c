// Per-jail user ids. Each jail (a VMM and the branches forked from it, which share its memory and
// so its trust domain) runs as a uid and gid of its own, taken from a configurable range. A uid is
// claimed by an exclusive flock on <dir>/<uid>.lock; the claim's descriptor is inherited by every
// process of the jail and never closed there, so the uid stays claimed exactly as long as one of
// them lives, however they end (kill -9 included), with nothing to clean up. The search starts at
// a hash of the jail's key, so a sandbox usually gets the same uid each time.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "util/fd.h"

namespace space::jail {

struct UidRange {
  uid_t first = 0;
  uint32_t count = 0;
};

struct UidClaim {
  uid_t uid = 0;  // also the gid
  Fd lock;        // pass it to the jail: the claim lasts while any copy is open
};

// Claims a free uid of `range` for `key`. Creates `dir` (mode 0700) if missing. Throws when the
// range is empty, starts at 0 or wraps, or when every uid in it is taken (with a hint naming the
// [jail] settings).
UidClaim claim_uid(const std::string& dir, const UidRange& range, const std::string& key);

}  // namespace space::jail
