// The expiry reaper, `space __expire` (core/expiry.h says when a sandbox expires and starts the
// reaper): one per root, it ends each sandbox at its time, destroying it or checkpointing it,
// takes the idle steps due (core/idle.h), and exits once no sandbox needs it.
#pragma once
#include <string>

#include "store/context.h"

namespace space::ops {

// Ends sandbox `id` as its expiry says, if it has expired and still runs; returns what it did
// ("destroyed", "checkpointed") or "" when there was nothing to do. Throws on failure.
std::string expire_sandbox(const store::Context& ctx, const std::string& id);
// The reaper (`space __expire`): reports "ok" on `ready_fd`, then ends sandboxes as they expire
// until none running has an expiry. Returns the exit code.
int reaper_main(const store::Context& ctx, int ready_fd);

}  // namespace space::ops
