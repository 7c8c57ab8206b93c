// The gvisor engine's warm pool ([engine.gvisor] pool = N in config.toml): N started, idle
// sandboxes kept per gvisor template, so that a create from that template takes one in a few
// milliseconds instead of starting runsc (about 300 ms here).
//
// A member is a gvisor sandbox made as create makes one (core/create_gvisor.h), under the pool's
// paths (store::pool_member_paths: <root>/store/pool/<template>/<member>, sockets in
// <run base>/.pool-<member>), with no grants, no network policy and no expiry; `list` does not
// show it. A create that the pool can serve (a gvisor template, and no --image or --disk-size,
// which are fixed at runsc's start) takes the oldest ready member: its record is rewritten for the
// new id, its run directory and then its subvolume are renamed to the sandbox's paths (the
// second rename is the commit: from there it is that sandbox, which destroy removes whatever
// happens next), and its monitor is told (control `adopt`) who it now is. Then create goes on as
// for any sandbox (policy, grants, files). A member that cannot be handed out is removed, and
// create starts a sandbox the usual way. runsc keeps the member's name for the container, and
// the sandbox keeps the member's cgroup (its record names it).
//
// After a create from a template with a pool, a detached `space __pool-fill TEMPLATE` (one per
// template at a time, by a lock) starts members until N are there, and removes members over N.
// It runs at nice 10, and so do the members it starts until they are ready, so that the sandbox
// just handed out runs its first commands ahead of them. It starts none while MemAvailable
// is under the template's memory plus 1 GiB: the pool is off where memory is short, and says so in
// its log and in `space template pool`. `space template pool` shows and fills the pools, `--drain`
// empties them, and `template rm` drains the template's. Members whose monitor died (a host
// restart, a kill) are removed by the next fill, claim or drain.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/create_options.h"
#include "egress/policy.h"
#include "store/config.h"
#include "store/context.h"
#include "store/paths.h"
#include "store/state.h"

namespace space::core {

// Whether a pool could serve a create with these options (its template aside).
bool pool_can_serve(const CreateOptions& opts);

// Hands sandbox `id` (paths `p`, not there yet) a ready member of its template's pool, made
// into that sandbox with `policy` and opts' expiry; nullopt when the pool is off, cannot serve
// these options, or has no ready member. Starts a refill either way when the template has a
// pool. Throws only once the sandbox exists (which it then removes) or on a signal.
std::optional<store::SandboxState> claim_pooled(const store::Context& ctx,
                                                const store::HostConfig& hc,
                                                const CreateOptions& opts, const std::string& id,
                                                const store::SandboxPaths& p,
                                                const std::optional<egress::Policy>& policy);

// Starts a detached refill of `template_name`'s pool unless one runs (or the pool is off).
// Never throws (it logs).
void refill_pool_later(const store::Context& ctx, const store::HostConfig& hc,
                       const std::string& template_name) noexcept;

struct PoolStatus {
  std::string template_name;
  uint32_t wanted = 0;      // [engine.gvisor] pool
  uint32_t ready = 0;       // members that a create can take now
  uint32_t starting = 0;    // members being started
  bool filling = false;     // a refill runs
  std::string memory_note;  // why none are started, when memory is short ("" = it is not)
  uint64_t memory_mib = 0;  // each member's memory limit
};

// Starts members of `template_name`'s pool until [engine.gvisor] pool are ready, and removes
// members over that number and dead ones; waits for another refill of it to end first (or, with
// `wait` false, leaves the work to it). Returns its status after. Throws if the template is
// missing or is not a gvisor one.
PoolStatus fill_pool(const store::Context& ctx, const std::string& template_name, bool wait = true);
// The pools of every gvisor template (with or without members), by template name.
std::vector<PoolStatus> pool_status(const store::Context& ctx);

}  // namespace space::core
