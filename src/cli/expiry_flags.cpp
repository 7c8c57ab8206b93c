// The expiry flags; see expiry_flags.h.
#include "cli/expiry_flags.h"

#include "util/duration.h"
#include "util/error.h"

namespace space::cli {

void ExpiryFlags::add(CLI::App* cmd, const std::string& what) {
  cmd->add_option("--ttl", ttl,
                  "End " + what + " this long from now: 30s, 10m, 2h, 1d (see --on-expiry)");
  cmd->add_option("--on-expiry", on_expiry,
                  "What ending means: destroy (the default) or checkpoint (resume continues it)")
      ->check(CLI::IsMember({"destroy", "checkpoint"}));
}

uint64_t ExpiryFlags::ttl_ms() const {
  if (ttl.empty()) {
    if (on_expiry != "destroy") fail("--on-expiry needs --ttl", "pass --ttl DURATION with it");
    return 0;
  }
  return parse_duration_ms(ttl, "--ttl ");
}

void IdleFlags::add(CLI::App* cmd) {
  cmd->add_option("--idle-pause", pause,
                  "Pause the sandbox after this long unused (no exec, cp, forwarded or network "
                  "connection): 30s, 10m, 2h; the next exec, cp or connection resumes it. off: "
                  "never (default: config.toml [defaults] idle_pause, else off)");
  cmd->add_option(
      "--idle-checkpoint", checkpoint,
      "Checkpoint the sandbox to disk and stop its VMM after this long unused; the next "
      "exec, cp or connection restores it. off: never (default: config.toml "
      "[defaults] idle_checkpoint, else off)");
}

core::IdleOptions IdleFlags::options() const {
  core::IdleOptions o;
  if (!pause.empty()) o.pause_ms = core::parse_idle_duration(pause, "--idle-pause");
  if (!checkpoint.empty())
    o.checkpoint_ms = core::parse_idle_duration(checkpoint, "--idle-checkpoint");
  return o;
}

}  // namespace space::cli
