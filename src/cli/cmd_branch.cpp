// `space branch ID [--count N] [--name PREFIX] [--net none|allow=RULE,...]`: N new running
// sandboxes with the source's exact memory, CPU, device and disk state; the source keeps running.
// Prints the new ids, one a line (a JSON array of {"id","parent"} objects with --format json).
// Branches get no grants of secrets unless --keep-secrets copies the source's live grants to each
// of them; they keep the source's network policy unless --net gives them another.
#include <cstdio>

#include "cli/app.h"
#include "cli/expiry_flags.h"
#include "ops/branch.h"
#include "util/json.h"

namespace space::cli {

namespace {
struct BranchFlags {
  std::string id;
  ops::BranchOptions opts;
  ExpiryFlags expiry;
};
}  // namespace

void register_branch(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "branch", "Fork a sandbox into new running sandboxes");
  auto* f = g.hold<BranchFlags>();  // freed with GlobalOptions
  cmd->add_option("--count,-n", f->opts.count, "How many branches (default 1)");
  cmd->add_option("--name", f->opts.name,
                  "Id of the branch, or prefix PREFIX-1..PREFIX-N with --count (default: random)");
  cmd->add_option("--net", f->opts.net,
                  "Network of the branches: none or allow=RULE[,RULE...] (default: the source's)");
  cmd->add_flag("--keep-secrets", f->opts.keep_secrets,
                "Give each branch the source's grants of secrets (default: none)");
  f->expiry.add(cmd, "each branch");
  cmd->add_option("id", f->id, "Sandbox id")->required();
  cmd->callback([&g, f] {
    f->opts.ttl_ms = f->expiry.ttl_ms();  // none: the source's expiry
    f->opts.on_expiry = f->expiry.on_expiry;
    auto out = ops::branch_sandbox(g.context(), f->id, f->opts);
    if (g.json()) {
      json::Value a = json::Value::array();
      for (const auto& st : out) {
        json::Value v = json::Value::object();
        v.set("id", st.id);
        v.set("parent", st.parent);
        a.push_back(std::move(v));
      }
      print_json(a);
    } else {
      for (const auto& st : out) std::printf("%s\n", st.id.c_str());
    }
  });
}

}  // namespace space::cli
