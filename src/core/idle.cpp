// Idle pause and idle checkpoint: the settings, the step due, what list shows, the reaper's
// visit and a command's use; see idle.h.
#include "core/idle.h"

#include <algorithm>
#include <chrono>

#include "core/session.h"
#include "util/duration.h"
#include "util/enum_names.h"
#include "util/error.h"
#include "util/log.h"

namespace space::core {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t created_ms(const store::SandboxState& st) {
  return store::parse_rfc3339(st.created).value_or(0) * 1000;
}

bool configured(const store::SandboxState& st) {
  return st.idle_pause_ms || st.idle_checkpoint_ms;
}

}  // namespace

uint64_t parse_idle_duration(const std::string& text, const std::string& flag) {
  if (text == "off" || text == "0") return 0;
  return parse_duration_ms(text, flag + " ");
}

void set_idle(store::SandboxState& st, const IdleOptions& o, const store::HostConfig& hc) {
  uint64_t pause = o.pause_ms.value_or(hc.idle_pause_ms);
  uint64_t checkpoint = o.checkpoint_ms.value_or(hc.idle_checkpoint_ms);
  if (pause && checkpoint && checkpoint <= pause)
    fail("an idle checkpoint after " + format_duration_ms(checkpoint) +
             " comes before the idle pause after " + format_duration_ms(pause),
         "give --idle-checkpoint a longer time than --idle-pause, or --idle-pause off to "
         "checkpoint without pausing first (config.toml: [defaults] idle_pause, "
         "idle_checkpoint)");
  st.idle_pause_ms = pause;
  st.idle_checkpoint_ms = checkpoint;
  st.idle_asleep = false;
}

const char* idle_step_name(IdleStep s) {
  static constexpr EnumName<IdleStep> kNames[] = {{IdleStep::Pause, "pause"},
                                                  {IdleStep::Checkpoint, "checkpoint"}};
  return name_in(kNames, s, "");
}

IdleStep idle_step(const store::SandboxState& st, int64_t unused_ms) {
  auto due = [&](uint64_t after) { return after && unused_ms >= static_cast<int64_t>(after); };
  if (st.status == store::Status::Running) {
    if (due(st.idle_checkpoint_ms)) return IdleStep::Checkpoint;
    if (due(st.idle_pause_ms)) return IdleStep::Pause;
  } else if (st.status == store::Status::Paused && st.idle_asleep) {
    if (due(st.idle_checkpoint_ms)) return IdleStep::Checkpoint;
  }
  return IdleStep::None;
}

IdleView idle_view(const store::SandboxPaths& p, const store::SandboxState& st, int64_t now) {
  IdleView v;
  v.configured = configured(st);
  if (!v.configured) return v;
  v.asleep = st.idle_asleep &&
             (st.status == store::Status::Paused || st.status == store::Status::Checkpointed);
  int64_t last = std::max(store::activity_mtime_ms(p.activity).value_or(0), created_ms(st));
  v.unused_ms = std::max<int64_t>(0, now - last);
  if (st.status == store::Status::Running) {
    v.next = st.idle_pause_ms ? IdleStep::Pause : IdleStep::Checkpoint;
    v.next_at_ms = last + int64_t(st.idle_pause_ms ? st.idle_pause_ms : st.idle_checkpoint_ms);
  } else if (st.status == store::Status::Paused && st.idle_asleep && st.idle_checkpoint_ms) {
    v.next = IdleStep::Checkpoint;
    v.next_at_ms = last + int64_t(st.idle_checkpoint_ms);
  }
  return v;
}

std::string status_text(const store::SandboxState& st) {
  std::string name = store::status_name(st.status);
  bool asleep = st.idle_asleep &&
                (st.status == store::Status::Paused || st.status == store::Status::Checkpointed);
  return asleep ? name + " (idle)" : name;
}

std::string idle_text(const IdleView& v) {
  if (!v.configured) return "-";
  std::string t = v.unused_ms >= 1000 ? format_duration_ms(uint64_t(v.unused_ms)) : "0s";
  if (v.next != IdleStep::None)
    t += std::string(" (") + idle_step_name(v.next) + " at " +
         store::rfc3339((v.next_at_ms + 999) / 1000) + ")";
  return t;
}

json::Value state_json(const store::Context& ctx, const store::SandboxState& st) {
  json::Value v = store::state_to_json(st);
  if (!configured(st)) return v;
  IdleView iv = idle_view(store::sandbox_paths(ctx.root, st.id), st, now_ms());
  json::Value idle = *v.find("idle");
  idle.set("unused_ms", iv.unused_ms);
  idle.set("next",
           iv.next == IdleStep::None ? json::Value() : json::Value(idle_step_name(iv.next)));
  idle.set("next_at", iv.next == IdleStep::None
                          ? json::Value()
                          : json::Value(store::rfc3339((iv.next_at_ms + 999) / 1000)));
  v.set("idle", std::move(idle));
  return v;
}

std::string idle_tick(const store::Context& ctx, const store::SandboxState& st) {
  if (!configured(st)) return "";
  store::SandboxPaths p = store::sandbox_paths(ctx.root, st.id);
  const int64_t made = created_ms(st);
  // A look without the claim first: most visits find nothing due.
  int64_t last = std::max(store::activity_mtime_ms(p.activity).value_or(made), made);
  if (idle_step(st, now_ms() - last) == IdleStep::None) return "";
  std::optional<store::IdleClaim> claim = store::IdleClaim::try_take(p.activity, made);
  if (!claim) return "";  // in use right now
  IdleStep step = idle_step(st, now_ms() - std::max(claim->last_used_ms(), made));
  if (step == IdleStep::Pause && idle_pause_sandbox(ctx, st.id)) return "paused";
  if (step == IdleStep::Checkpoint && idle_checkpoint_sandbox(ctx, st.id)) return "checkpointed";
  return "";
}

store::ActivityHold use_sandbox(const store::Context& ctx, const std::string& id) {
  store::SandboxPaths p = store::sandbox_paths(ctx.root, id);
  store::ActivityHold hold(p.activity);  // an idle step under way finishes first
  store::SandboxState st;
  try {
    st = store::read_state(p.state);
  } catch (const Error&) {
    return hold;  // no such sandbox: the command says so itself
  }
  if (st.idle_asleep) {
    int64_t us = 0;
    if (wake_sandbox(ctx, id, &us))
      log::info("sandbox " + id + " woke from its idle sleep in " + std::to_string(us / 1000) +
                "." + std::to_string(us / 100 % 10) + " ms");
  }
  return hold;
}

}  // namespace space::core
