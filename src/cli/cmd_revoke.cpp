// `space revoke ID NAME...` or `space revoke ID --all`: withdraws grants; the sandbox can no
// longer fetch those secrets (what it fetched already is out of our hands).
#include <cstdio>

#include "cli/app.h"
#include "cred/client.h"
#include "cred/store.h"
#include "util/error.h"
#include "util/json.h"

namespace space::cli {

namespace {
struct RevokeFlags {
  std::string id;
  std::vector<std::string> names;
  bool all = false;
};
}  // namespace

void register_revoke(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "revoke", "Withdraw a sandbox's grants of secrets");
  auto* f = g.hold<RevokeFlags>();  // freed with GlobalOptions
  cmd->add_option("id", f->id, "Sandbox id")->required();
  auto* names = cmd->add_option("name", f->names, "Secret names");
  cmd->add_flag("--all", f->all, "Every grant of the sandbox")->excludes(names);
  cmd->callback([&g, f] {
    if (!f->all && f->names.empty()) fail("name the secrets to revoke, or pass --all");
    store::Context ctx = g.context();
    if (f->all) {
      cred::cred_call(ctx, proto::credd::RevokeAllRequest{f->id, false, "space revoke"});
      return;
    }
    for (const auto& n : f->names) cred::check_secret_name(n);
    for (const auto& n : f->names)
      cred::cred_call(ctx, proto::credd::RevokeRequest{f->id, n, "space revoke"});
  });
}

}  // namespace space::cli
