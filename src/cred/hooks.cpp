// Credential steps of other commands; see hooks.h.
#include "cred/hooks.h"

#include "cred/client.h"
#include "cred/grants.h"
#include "cred/helper.h"
#include "cred/paths.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::cred {

void grant_secrets(const store::Context& ctx, const std::string& id,
                   const std::vector<GrantSpec>& specs) {
  for (const auto& s : specs)
    cred_call(ctx, proto::credd::GrantRequest{id, s.name, s.ttl_ms, s.uses, s.inject});
}

void revoke_sandbox_grants(const store::Context& ctx, const std::string& id,
                           const std::string& reason, bool forget) noexcept {
  try {
    CredPaths p = cred_paths(ctx.root);
    bool known = fs::exists(p.sock);  // a helper runs (or died and left its socket)
    if (!known && fs::exists(p.grants)) known = GrantTable::load(p.grants).has_sandbox(id);
    if (!known) return;
    cred_call(ctx, proto::credd::RevokeAllRequest{id, forget, reason});
  } catch (const std::exception& e) {
    log::warn("sandbox " + id + ": could not revoke its secrets (" + e.what() +
              "); the credential helper drops them when it next starts");
  }
}

void listen_for_sandbox(const store::Context& ctx, const std::string& id) noexcept {
  try {
    CredPaths p = cred_paths(ctx.root);
    if (!helper_running(p)) return;
    // Any request makes the helper look again at which sandboxes it listens for.
    cred_call(ctx, proto::credd::GrantsRequest{id});
  } catch (const std::exception& e) {
    log::warn("sandbox " + id + ": the credential helper did not answer (" + e.what() + ")");
  }
}

void ensure_helper_for(const store::Context& ctx, const std::string& id) noexcept {
  try {
    CredPaths p = cred_paths(ctx.root);
    if (helper_running(p) || !fs::exists(p.grants) || !GrantTable::load(p.grants).has_sandbox(id))
      return;
    log::info("sandbox " + id + " holds grants and no credential helper runs: starting one");
    cred_call(ctx, proto::credd::GrantsRequest{id});  // starts it, and it listens for `id`
  } catch (const std::exception& e) {
    log::warn("sandbox " + id + ": could not start the credential helper (" + e.what() + ")");
  }
}

std::vector<std::string> copy_grants(const store::Context& ctx, const std::string& from,
                                     const std::string& to) {
  return cred_call(ctx, proto::credd::CopyRequest{from, to}).copied;
}

}  // namespace space::cred
