// The expiry reaper, `space __expire`; see reaper.h. It rescans the sandboxes' records every
// second (a few hundred small files at most), so it needs no notice of a new expiry.
#include "ops/reaper.h"

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <map>

#include "core/expiry.h"
#include "core/idle.h"
#include "core/sandbox.h"
#include "core/session.h"
#include "core/session_util.h"
#include "util/daemon.h"
#include "util/error.h"
#include "util/log.h"
#include "util/process.h"
#include "util/ready.h"

namespace space::ops {
namespace {

constexpr int kIdleExitMs = 5'000;  // nothing left to expire for this long: exit

bool live(const store::SandboxState& st) {
  return st.status == store::Status::Running || st.status == store::Status::Paused;
}

// A TTL ends a sandbox asleep in an idle checkpoint as well: it would wake otherwise.
bool expiring(const store::SandboxState& st) {
  bool asleep = st.status == store::Status::Checkpointed && st.idle_asleep;
  return core::expires_at(st) && (live(st) || asleep);
}

// Whether an idle step may still come (core/idle.h).
bool idling(const store::SandboxState& st) {
  if (!st.idle_pause_ms && !st.idle_checkpoint_ms) return false;
  return st.status == store::Status::Running ||
         (st.status == store::Status::Paused && st.idle_asleep && st.idle_checkpoint_ms);
}

}  // namespace

std::string expire_sandbox(const store::Context& ctx, const std::string& id) {
  store::SandboxState st = core::sandbox_state(ctx, id);
  int64_t at = core::expires_at(st);
  if (!at || !expiring(st) || ::time(nullptr) < at) return "";
  if (st.on_expiry == "checkpoint") {
    core::checkpoint_sandbox(ctx, id);  // one asleep in an idle checkpoint: made explicit
    // Done: a resume continues it without this expiry.
    core::LockedSandbox s = core::lock_sandbox(ctx, id);
    s.st.expires.clear();
    s.st.on_expiry.clear();
    store::write_state(s.p.state, s.st);
    return "checkpointed";
  }
  core::destroy_sandbox(ctx, id, /*force=*/false);
  return "destroyed";
}

int reaper_main(const store::Context& ctx, int ready_fd) {
  Fd ready(ready_fd);
  try {
    Fd lock = daemon::take_lock(core::reaper_lock_path(ctx), 3000);
    if (!lock) {
      log::info("an expiry reaper is already running for " + ctx.root);
      ready::report_line(ready, "ok");
      return 0;
    }
    proc::SignalGuard sig;
    ready::report_line(ready, "ok");
    ready.reset();
    log::info("expiry reaper serving " + ctx.root);
    int idle_ms = 0;
    std::map<std::string, std::pair<int64_t, int64_t>> retry;  // id -> (next try, backoff), s
    for (;;) {
      bool pending = false;
      const int64_t now = ::time(nullptr);
      for (const auto& st : core::list_sandboxes(ctx)) {
        if (!expiring(st) && !idling(st)) continue;
        pending = true;
        auto r = retry.find(st.id);
        if (r != retry.end() && now < r->second.first) continue;
        try {
          std::string done = expire_sandbox(ctx, st.id);
          if (!done.empty())
            log::info("sandbox " + st.id + " expired at " + st.expires + ": " + done);
          else if (idling(st) && !(done = core::idle_tick(ctx, st)).empty())
            log::info("sandbox " + st.id + " idle: " + done);
          retry.erase(st.id);
        } catch (const Error& e) {
          // Try again later, less and less often (up to once a minute): the VMM's backstop has
          // stopped or paused the guest meanwhile.
          int64_t backoff = r == retry.end() ? 1 : std::min<int64_t>(r->second.second * 2, 60);
          retry[st.id] = {now + backoff, backoff};
          log::error("sandbox " + st.id + (expiring(st) ? " expired at " + st.expires : " idle") +
                     ": " + e.what() + "; trying again in " + std::to_string(backoff) + " s");
        }
      }
      idle_ms = pending ? 0 : idle_ms + 1000;
      if (idle_ms >= kIdleExitMs) {
        log::info("no sandbox left to expire: exiting");
        return 0;
      }
      pollfd pf{sig.fd(), POLLIN, 0};
      if (::poll(&pf, 1, 1000) > 0) {
        log::info("signal: exiting");
        return 0;
      }
    }
  } catch (const std::exception& e) {
    return ready::report_failure(ready, e);
  }
}

}  // namespace space::ops
