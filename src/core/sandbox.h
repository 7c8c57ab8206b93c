// The sandbox lifecycle API the CLI calls: create, destroy, list, state. Each operation that
// changes a sandbox holds its SandboxLock throughout. create never leaves a half-made sandbox:
// on any failure (or SIGINT/SIGTERM/SIGHUP) it kills the VMM it started and removes the sandbox
// and run directories before rethrowing.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/create_options.h"
#include "store/context.h"
#include "store/paths.h"
#include "store/state.h"

namespace space::core {

// Creates a sandbox, hands it opts.secrets and opts.copies, and returns its state (status
// running); all or nothing. From a template: snapshots it and returns once the restored VMM runs.
// Cold (or when the implicit default template is missing, with a warning): boots and returns once
// guest-init has answered the agent handshake. Waits at most $SPACE_BOOT_TIMEOUT seconds (default
// 300).
store::SandboxState create_sandbox(const store::Context& ctx, const CreateOptions& opts);
// Stops the sandbox's VMM if it runs (politely over control.sock unless `force`, then SIGKILL)
// and removes its run directory and its subvolume (or plain directory, for sandboxes made
// before the btrfs store). Throws if the id does not exist.
void destroy_sandbox(const store::Context& ctx, const std::string& id, bool force);
// Every sandbox under the root with its observed status, sorted by creation time then id.
// Unreadable entries are skipped with a warning in the log.
std::vector<store::SandboxState> list_sandboxes(const store::Context& ctx);
// One sandbox's state with its observed status. Throws if the id does not exist.
store::SandboxState sandbox_state(const store::Context& ctx, const std::string& id);

// Ends the VMM that `st` records, if that exact process still runs: a "stop" request on
// control.sock first (skipped when polite_ms is 0), then SIGKILL. Returns once it is gone.
void stop_vmm(const store::SandboxState& st, const store::SandboxPaths& p, int polite_ms);
// Removes what a create of `id` made before it failed (its VMM already killed): its cgroup
// `cgroup`, its network policy, its run directory and its subvolume. Logs, never throws.
void remove_half_made(const store::Context& ctx, const store::SandboxPaths& p,
                      const std::string& id, const std::string& cgroup) noexcept;
// Throws the "sandbox <id> does not exist" error unless its directory has a state.json.
void require_sandbox(const store::SandboxPaths& p, const std::string& id);

}  // namespace space::core
