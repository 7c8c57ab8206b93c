// `space grant ID NAME[:ttl=DURATION][:uses=N]...`: lets sandbox ID fetch these secrets (from
// the space-secret tool in the guest, or through `space exec --secret-env`), until the ttl has
// passed, the uses are spent, or the grant is revoked (revoke, destroy, checkpoint).
#include "cli/app.h"
#include "cred/grants.h"
#include "cred/hooks.h"

namespace space::cli {

namespace {
struct GrantFlags {
  std::string id;
  std::vector<std::string> specs;
};
}  // namespace

void register_grant(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("grant", "Let a sandbox fetch secrets");
  cmd->fallthrough();
  auto* f = g.hold<GrantFlags>();  // freed with GlobalOptions
  cmd->add_option("id", f->id, "Sandbox id")->required();
  cmd->add_option("secret", f->specs, "NAME[:ttl=DURATION][:uses=N], e.g. API_TOKEN:ttl=10m:uses=1")
      ->required();
  cmd->callback([&g, f] {
    std::vector<cred::GrantSpec> specs;
    for (const auto& s : f->specs) specs.push_back(cred::parse_grant_spec(s));
    cred::grant_secrets(g.context(), f->id, specs);
  });
}

}  // namespace space::cli
