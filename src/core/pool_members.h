// The members of the gvisor warm pools (core/pool.h has the whole story): where a template's pool
// lives (<root>/store/pool/<template>, with its two locks and its refill's log), its members
// with their records, whether one is ready or still starting, and their removal, one or all.
// Below core/pool.h so that removing a template (core/template.h) can drain its pool.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/config.h"
#include "store/context.h"
#include "store/paths.h"
#include "store/state.h"

namespace space::core {

// In a member's run directory until it is handed out: the member's name. A claim that died
// between its two renames left the run directory under the new sandbox's name; this says whose.
inline constexpr const char* kPoolMarker = "pool-member";
inline constexpr int kPoolLockWaitMs = 10'000;   // the claim lock: held for milliseconds
inline constexpr int kPoolFillWaitMs = 300'000;  // the fill lock: a refill's whole run

struct PoolDir {
  std::string dir;         // <root>/store/pool/<template>
  std::string claim_lock;  // taken by a claim, and by whatever removes members
  std::string fill_lock;   // held by the one refill at work
  std::string fill_log;    // the detached refill's output
};
PoolDir pool_dir(const store::Context& ctx, const std::string& template_name);

struct PoolMember {
  std::string name;
  store::SandboxPaths p;
  std::optional<store::SandboxState> st;  // nullopt: no readable record
};
// Started, its monitor alive, not being handed out.
bool member_ready(const PoolMember& m);
// Still being started (no record yet, or "creating" under its own name).
bool member_starting(const PoolMember& m);
// The members of a template's pool, oldest first.
std::vector<PoolMember> pool_members(const store::Context& ctx, const std::string& template_name);
// Removes member `m`: its monitor (and with its cgroup runsc's processes), its run directory
// (also where a claim that died midway moved it), and its subvolume. Logs, never throws.
void discard_member(const store::HostConfig& hc, const PoolMember& m);
// Removes every member of `template_name`'s pool, and the pool, after any refill of it ends.
// Returns how many there were; throws when there is neither such a pool nor such a template.
uint32_t drain_pool(const store::Context& ctx, const std::string& template_name);

}  // namespace space::core
