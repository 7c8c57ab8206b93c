// `space grant ID NAME[:ttl=DURATION][:uses=N]... [--inject HOST[:PORT]]...`: lets sandbox ID
// fetch these secrets (from the space-secret tool in the guest, or through `space exec
// --secret-env`), until the ttl has passed, the uses are spent, or the grant is revoked (revoke,
// destroy, checkpoint). With --inject, each is bound to those hosts instead: the sandbox gets a
// placeholder, which the network broker swaps for the value only in requests to them
// (core/inject.h).
#include "cli/app.h"
#include "core/inject.h"
#include "cred/grants.h"

namespace space::cli {

namespace {
struct GrantFlags {
  std::string id;
  std::vector<std::string> specs;
  std::vector<std::string> inject;
};
}  // namespace

void register_grant(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "grant", "Let a sandbox fetch secrets, or bind them to hosts");
  auto* f = g.hold<GrantFlags>();  // freed with GlobalOptions
  cmd->add_option("id", f->id, "Sandbox id")->required();
  cmd->add_option("secret", f->specs, "NAME[:ttl=DURATION][:uses=N], e.g. API_TOKEN:ttl=10m:uses=1")
      ->required();
  cmd->add_option("--inject", f->inject,
                  "Bind the secrets to this host (HOST or HOST:PORT, port 443 by default; "
                  "repeatable): the sandbox gets a placeholder, swapped for the value only in "
                  "HTTPS requests to these hosts, which its network policy must allow")
      ->allow_extra_args(false);
  cmd->callback([&g, f] {
    std::vector<cred::GrantSpec> specs;
    std::vector<std::string> hosts;
    for (const auto& h : f->inject) hosts.push_back(cred::parse_inject_host(h));
    for (const auto& s : f->specs) {
      specs.push_back(cred::parse_grant_spec(s));
      specs.back().inject = hosts;
    }
    core::grant_secrets(g.context(), f->id, specs);
  });
}

}  // namespace space::cli
