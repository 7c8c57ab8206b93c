// The credential steps of other commands: grants made by `create --secret`, revocation on
// destroy and checkpoint, and the copy of `branch --keep-secrets`. Each is one request to the
// helper (started on demand). Revocation is skipped, at no cost, when neither grants.json nor a
// running helper can know the sandbox, so destroy and checkpoint stay fast for sandboxes that
// never had a secret.
#pragma once
#include <string>
#include <vector>

#include "cred/grants.h"
#include "store/context.h"

namespace space::cred {

// Grants every spec ("NAME[:ttl=D][:uses=N]", already parsed) to sandbox `id`. Throws.
void grant_secrets(const store::Context& ctx, const std::string& id,
                   const std::vector<GrantSpec>& specs);
// Revokes every grant of `id` (`forget`: the sandbox is gone, drop it and its socket) and audits
// them with `reason`. Never throws: if the helper cannot be reached it warns, and the helper drops
// grants of vanished sandboxes when it next starts.
void revoke_sandbox_grants(const store::Context& ctx, const std::string& id,
                           const std::string& reason, bool forget) noexcept;
// Has a running helper listen for sandbox `id` now (its run directory is new: a resume), when it
// knows the sandbox; otherwise nothing. A jailed VMM cannot start a helper, so a sandbox whose
// helper is not listening gets its guest's requests refused until one does. Never throws.
void listen_for_sandbox(const store::Context& ctx, const std::string& id) noexcept;
// Starts the helper if sandbox `id` holds a grant and no helper runs (it was killed): a jailed VMM
// cannot start one, so `exec` does, before the command that may ask for a secret runs. Costs a
// lock probe when a helper runs. Never throws (warns).
void ensure_helper_for(const store::Context& ctx, const std::string& id) noexcept;
// Gives `to` the live grants of `from` (same names, remaining ttl and uses); returns their names.
std::vector<std::string> copy_grants(const store::Context& ctx, const std::string& from,
                                     const std::string& to);

}  // namespace space::cred
