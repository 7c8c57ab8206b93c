// Sandboxes that end by themselves: `create --ttl DURATION [--on-expiry destroy|checkpoint]`
// (and branch and resume) record when in state.json ("expires", "on_expiry"). The reaper,
// `space __expire` (one per root, started by the command that set an expiry or an idle step,
// gone once no sandbox needs it; it also takes the idle steps, core/idle.h), ends each at its time:
// destroys it, or checkpoints it (a later `space resume` continues it, with no expiry unless given
// a new --ttl). A jailed VMM cannot remove its own files, so the privileged reaper does the work;
// each VMM keeps a backstop of its own: if its sandbox still runs 30 s past its expiry (no reaper),
// it stops its guest (destroy) or pauses it (checkpoint), so an expired guest never runs on
// unnoticed.
#pragma once
#include <cstdint>
#include <string>

#include "store/context.h"
#include "store/state.h"

namespace space::core {

// --ttl and --on-expiry as a command got them.
struct ExpiryOptions {
  uint64_t ttl_ms = 0;  // 0: none given
  std::string on_expiry = "destroy";
};

// Sets `st`'s expiry to `ttl_ms` from now with `on_expiry` ("destroy" or "checkpoint"; throws
// naming the flag otherwise). A ttl of 0 clears it.
void set_expiry(store::SandboxState& st, uint64_t ttl_ms, const std::string& on_expiry);
// Unix seconds of `st`'s expiry, 0 when it has none.
int64_t expires_at(const store::SandboxState& st);
// Whether sandbox `st` needs the reaper: it has an expiry, or an idle pause or checkpoint
// (core/idle.h).
bool needs_reaper(const store::SandboxState& st);
// Starts the reaper for `ctx.root` unless one runs. Throws with its message when it cannot start.
void ensure_reaper(const store::Context& ctx);
// The reaper's lock: held by the running reaper of `ctx.root` (ops/reaper.h).
std::string reaper_lock_path(const store::Context& ctx);
}  // namespace space::core
