// Idle pause and idle checkpoint. `create` and `run` take --idle-pause DURATION and
// --idle-checkpoint DURATION (defaults: config.toml [defaults] idle_pause, idle_checkpoint; off
// unless set), recorded in state.json. A sandbox unused that long (no exec, cp, forwarded
// connection or guest network connection: store/activity.h) is paused, or checkpointed to disk
// with its VMM gone, and marked asleep. The next exec, cp or forwarded connection wakes it on its
// own (wake_sandbox in core/session.h), paying only the resume or the restore. An explicit pause
// or checkpoint is never woken that way.
//
// Where it lives: every use of a guest passes through a host process of ours (the CLI's exec,
// cp and forward, the egress broker), and each holds the sandbox's activity file while it
// runs; the expiry reaper (`space __expire`, ops/reaper.h), which already visits every
// sandbox once a second, takes the next idle step when one is due. So idleness works the same on
// both engines and needs nothing of a jailed VMM, which sees connections but cannot write the
// sandbox's record. A TTL still ends a sandbox asleep on time.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "store/activity.h"
#include "store/config.h"
#include "store/context.h"
#include "store/paths.h"
#include "store/state.h"
#include "util/json.h"

namespace space::core {

// --idle-pause and --idle-checkpoint as a command got them; unset: config.toml's.
struct IdleOptions {
  std::optional<uint64_t> pause_ms;       // 0: off
  std::optional<uint64_t> checkpoint_ms;  // 0: off
};

// A duration flag's value ("30s", "10m", ...) in ms, or 0 for "off" or "0". Throws naming `flag`.
uint64_t parse_idle_duration(const std::string& text, const std::string& flag);

// Records `o` (else hc's defaults) in `st`. Throws, with a hint, when the checkpoint would come
// before the pause (the pause would never happen).
void set_idle(store::SandboxState& st, const IdleOptions& o, const store::HostConfig& hc);

// What idleness asks of a sandbox now.
enum class IdleStep { None, Pause, Checkpoint };
const char* idle_step_name(IdleStep s);  // "pause", "checkpoint" ("" for None)

// The step due for sandbox `st` (its observed status) unused for `unused_ms`.
IdleStep idle_step(const store::SandboxState& st, int64_t unused_ms);

// A sandbox's idleness as list, state and stats show it.
struct IdleView {
  bool configured = false;  // it has an idle pause or checkpoint
  bool asleep = false;      // paused or checkpointed by idleness
  int64_t unused_ms = 0;    // since its last use (or its creation)
  IdleStep next = IdleStep::None;
  int64_t next_at_ms = 0;  // when `next` happens (if still unused), ms since the epoch
};
// `now_ms`: milliseconds since the epoch.
IdleView idle_view(const store::SandboxPaths& p, const store::SandboxState& st, int64_t now_ms);

// "paused (idle)", "checkpointed (idle)", else the status's name.
std::string status_text(const store::SandboxState& st);
// The IDLE column: "-", or "41s" and the next step: "41s (checkpoint at 2026-...Z)".
std::string idle_text(const IdleView& v);
// state_to_json(st), its "idle" object completed with "unused_ms", "next" and "next_at".
json::Value state_json(const store::Context& ctx, const store::SandboxState& st);

// The reaper's visit (`st` as list_sandboxes read it): takes the idle step that is due, if the
// sandbox is not in use; returns what it did ("paused", "checkpointed") or "".
std::string idle_tick(const store::Context& ctx, const store::SandboxState& st);

// A use of sandbox `id` (an exec, a copy, a forwarded connection): holds its activity file for as
// long as the returned hold lives, and first wakes it if idleness put it to sleep.
store::ActivityHold use_sandbox(const store::Context& ctx, const std::string& id);

}  // namespace space::core
