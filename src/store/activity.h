// A sandbox's activity file, <dir>/activity: what idle pause and idle checkpoint (core/idle.h)
// measure. Every command that uses a sandbox's guest (an exec, a copy, a forwarded connection, a
// guest's network connection through the broker) holds a shared flock on it while it runs and
// sets its mtime when it starts and when it ends. So the sandbox is idle exactly when nobody
// holds the file, and has been for as long as its mtime is old. The reaper decides to pause or
// checkpoint only while it holds the file exclusively (never waiting for it), so no command can
// start on a guest that is going to sleep under it: a command that comes meanwhile waits for
// the pause or the checkpoint to finish, then finds it asleep and wakes it. The file lives in the
// sandbox's persistent directory, so it outlasts a checkpoint, whose run directory goes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "util/fd.h"

namespace space::store {

// The mtime of `path` in milliseconds since the epoch, or nullopt when it does not exist.
std::optional<int64_t> activity_mtime_ms(const std::string& path);

// A use of the sandbox: a shared flock on its activity file (made if missing) and its mtime set
// now, on construction and again on destruction. Blocking waits for an idle pause or checkpoint
// under way to finish; NonBlocking does not wait, and then holds nothing (held() false) but still
// sets the time. A sandbox destroyed meanwhile (its directory gone) is held by nobody: the
// command then fails on its own, as it would have without this.
class ActivityHold {
 public:
  enum class Wait { Blocking, NonBlocking };
  explicit ActivityHold(const std::string& path, Wait wait = Wait::Blocking);
  ~ActivityHold();
  ActivityHold(ActivityHold&&) = default;
  ActivityHold& operator=(ActivityHold&&) = delete;
  bool held() const { return held_; }

 private:
  Fd fd_;
  bool held_ = false;
};

// The reaper's exclusive hold on an activity file while it puts the sandbox to sleep.
class IdleClaim {
 public:
  // Takes it without waiting. nullopt when a command holds the file (the sandbox is in use) or it
  // cannot be opened. A missing file is made with mtime `created_ms` (the sandbox has not been
  // used since it was made).
  static std::optional<IdleClaim> try_take(const std::string& path, int64_t created_ms);
  // When the sandbox was last used, in milliseconds since the epoch.
  int64_t last_used_ms() const { return last_used_ms_; }

 private:
  IdleClaim(Fd fd, int64_t last) : fd_(std::move(fd)), last_used_ms_(last) {}
  Fd fd_;
  int64_t last_used_ms_ = 0;
};

}  // namespace space::store
