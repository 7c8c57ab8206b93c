// Credential steps of other commands; see hooks.h.
#include "cred/hooks.h"

#include "cred/client.h"
#include "cred/paths.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::cred {

json::Value grant_request(const std::string& id, const GrantSpec& spec) {
  json::Value req = json::Value::object();
  req.set("op", "grant");
  req.set("sandbox", id);
  req.set("name", spec.name);
  if (spec.ttl_ms) req.set("ttl_ms", *spec.ttl_ms);
  if (spec.uses) req.set("uses", *spec.uses);
  return req;
}

void grant_secrets(const store::Context& ctx, const std::string& id, const std::vector<GrantSpec>& specs) {
  for (const auto& s : specs) cred_call(ctx, grant_request(id, s));
}

void revoke_sandbox_grants(const store::Context& ctx, const std::string& id, const std::string& reason,
                           bool forget) noexcept {
  try {
    CredPaths p = cred_paths(ctx.root);
    bool known = fs::exists(p.sock);  // a helper runs (or died and left its socket)
    if (!known && fs::exists(p.grants)) known = GrantTable::load(p.grants).has_sandbox(id);
    if (!known) return;
    json::Value req = json::Value::object();
    req.set("op", "revoke");
    req.set("sandbox", id);
    req.set("all", true);
    req.set("forget", forget);
    req.set("reason", reason);
    cred_call(ctx, req);
  } catch (const std::exception& e) {
    log::warn("sandbox " + id + ": could not revoke its secrets (" + e.what() +
              "); the credential helper drops them when it next starts");
  }
}

std::vector<std::string> copy_grants(const store::Context& ctx, const std::string& from,
                                     const std::string& to) {
  json::Value req = json::Value::object();
  req.set("op", "copy");
  req.set("from", from);
  req.set("to", to);
  std::vector<std::string> out;
  json::Value reply = cred_call(ctx, req);
  for (const auto& n : reply.at("copied").as_array()) out.push_back(n.as_string());
  return out;
}

}  // namespace space::cred
