// Sandbox expiry: the record and starting the reaper; see expiry.h.
#include "core/expiry.h"

#include <time.h>

#include "store/paths.h"
#include "util/daemon.h"
#include "util/error.h"
#include "util/fs.h"

namespace space::core {
namespace {

constexpr int kStartTimeoutMs = 10'000;

std::string log_path(const store::Context& ctx) {
  return fs::absolute(ctx.root) + "/expire.log";
}

}  // namespace

void set_expiry(store::SandboxState& st, uint64_t ttl_ms, const std::string& on_expiry) {
  if (on_expiry != "destroy" && on_expiry != "checkpoint")
    fail("--on-expiry " + on_expiry + ": neither destroy nor checkpoint",
         "pass --on-expiry destroy (the default) or --on-expiry checkpoint");
  if (ttl_ms == 0) {
    st.expires.clear();
    st.on_expiry.clear();
    return;
  }
  st.expires = store::rfc3339(::time(nullptr) + static_cast<int64_t>((ttl_ms + 999) / 1000));
  st.on_expiry = on_expiry;
}

int64_t expires_at(const store::SandboxState& st) {
  if (st.expires.empty()) return 0;
  return store::parse_rfc3339(st.expires).value_or(0);
}

bool needs_reaper(const store::SandboxState& st) {
  return !st.expires.empty() || st.idle_pause_ms || st.idle_checkpoint_ms;
}

std::string reaper_lock_path(const store::Context& ctx) {
  return fs::absolute(ctx.root) + "/expire.lock";
}

void ensure_reaper(const store::Context& ctx) {
  if (daemon::running(reaper_lock_path(ctx))) return;
  std::vector<std::string> argv = {"/proc/self/exe",       "--root",
                                   fs::absolute(ctx.root), "--log-level",
                                   ctx.log_level,          "--log-format",
                                   ctx.log_format,         "__expire",
                                   "--ready-fd",           "3"};
  daemon::start(argv, log_path(ctx), "the expiry reaper", kStartTimeoutMs).release();
}

}  // namespace space::core
