// `space secret set NAME` (the value from stdin, never from argv), `space secret list` (names and
// metadata only), `space secret rm NAME...`, `space secret grants [ID]` (who may fetch what) and
// `space secret audit [--sandbox ID] [--name NAME]` (the audit log). All but audit go through the
// credential helper, which they start if needed; audit reads the log file.
#include <unistd.h>

#include <cstdio>

#include "cli/app.h"
#include "cli/table.h"
#include "cred/audit.h"
#include "cred/client.h"
#include "cred/paths.h"
#include "cred/store.h"
#include "proto/cred.h"
#include "util/error.h"
#include "util/json.h"
#include "util/secret_memory.h"
#include "util/wipe.h"

namespace space::cli {

namespace {

struct SecretFlags {
  std::string name;
  std::vector<std::string> names;
  std::string sandbox, filter_name;
};

std::string null_or(const json::Value* v) {
  return v && v->is_string() ? v->as_string()
         : v && v->is_int()  ? std::to_string(v->as_int())
                             : "-";
}

// All of stdin, at most the secret size limit.
SecretString read_value() {
  if (::isatty(0))
    std::fprintf(stderr, "space: reading the value from the terminal; end it with Ctrl-D\n");
  SecretString v;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("read the secret from stdin");
    if (n == 0) break;
    append_wiped(v.bytes, {buf, size_t(n)});
    if (v.bytes.size() > proto::kMaxSecretSize)
      fail("the value on stdin is larger than " + std::to_string(proto::kMaxSecretSize) + " bytes");
  }
  wipe(buf, sizeof buf);
  return v;
}

// secret set NAME: the value from stdin, held in protected memory until sent.
void secret_set(GlobalOptions& g, const SecretFlags& f) {
  cred::check_secret_name(f.name);
  protect_process_memory();  // this process holds the value: no core dump, no ptrace
  SecretString v = read_value();
  const size_t size = v.bytes.size();
  auto r = cred::cred_call(g.context(), proto::credd::SetRequest{f.name, std::move(v)});
  if (g.json()) {
    json::Value o = json::Object{{"name", f.name}, {"size", size}, {"replaced", r.replaced}};
    print_json(o);
  }
}

// secret list: names and metadata.
void secret_list(GlobalOptions& g) {
  auto r = cred::cred_call(g.context(), proto::credd::ListRequest{});
  using Info = proto::credd::SecretInfo;
  print_list(
      g.json(), r.secrets, [](const Info& s) { return proto::credd::to_json(s); },
      {"NAME", "SIZE", "CREATED", "UPDATED"},
      [](const Info& s) -> std::vector<std::string> {
        return {s.name, std::to_string(s.size), s.created, s.updated};
      });
}

// secret grants [ID]: every grant (or one sandbox's), with its state and bound hosts.
void secret_grants(GlobalOptions& g, const SecretFlags& f) {
  auto r = cred::cred_call(g.context(), proto::credd::GrantsRequest{f.sandbox});
  using Info = proto::credd::GrantInfo;
  auto row = [](const Info& x) -> std::vector<std::string> {
    std::string hosts;
    for (const auto& h : x.inject) hosts += (hosts.empty() ? "" : ",") + h;
    return {x.sandbox,
            x.name,
            x.state,
            x.expires.value_or("-"),
            x.uses_left ? std::to_string(*x.uses_left) : "-",
            hosts.empty() ? "-" : hosts};
  };
  print_list(
      g.json(), r.grants, [](const Info& x) { return proto::credd::to_json(x); },
      {"SANDBOX", "NAME", "STATE", "EXPIRES", "USES LEFT", "INJECT"}, row);
}

// secret audit: the audit log's lines, both generations, filtered by sandbox or name.
void secret_audit(GlobalOptions& g, const SecretFlags& f) {
  auto lines = cred::audit_read(cred::cred_paths(g.root).audit);
  json::Value out = json::Value::array();
  std::vector<std::vector<std::string>> rows = {{"TIME", "SANDBOX", "NAME", "OUTCOME", "DETAIL"}};
  for (auto& l : lines) {
    std::string sb = null_or(l.find("sandbox")), name = null_or(l.find("name"));
    if (!f.sandbox.empty() && sb != f.sandbox) continue;
    if (!f.filter_name.empty() && name != f.filter_name) continue;
    rows.push_back({null_or(l.find("time")), sb, name.empty() ? "-" : name,
                    null_or(l.find("outcome")), l.find("detail") ? null_or(l.find("detail")) : ""});
    out.push_back(std::move(l));
  }
  if (g.json())
    print_json(out, 2);
  else
    std::printf("%s", format_table(rows).c_str());
}

}  // namespace

void register_secret(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "secret", "Manage the secrets the credential helper holds");
  cmd->require_subcommand(1);
  auto* f = g.hold<SecretFlags>();  // freed with GlobalOptions

  auto* set = add_command(*cmd, "set", "Store a secret; the value is read from stdin");
  set->add_option("name", f->name, "Secret name: A-Z a-z 0-9 _ . - (1-128 characters)")->required();
  set->callback([&g, f] { secret_set(g, *f); });

  auto* list = add_command(*cmd, "list", "List secrets: names and metadata, never values");
  list->alias("ls");
  list->callback([&g] { secret_list(g); });

  auto* rm = add_command(*cmd, "rm", "Delete secrets (grants of them then fetch nothing)");
  rm->add_option("name", f->names, "Secret names")->required();
  rm->callback([&g, f] {
    for (const auto& n : f->names) cred::cred_call(g.context(), proto::credd::RemoveRequest{n});
  });

  auto* grants = add_command(*cmd, "grants", "List grants: which sandbox may fetch what");
  grants->add_option("id", f->sandbox, "Only this sandbox's grants");
  grants->callback([&g, f] { secret_grants(g, *f); });

  auto* audit = add_command(
      *cmd, "audit", "Show the audit log of grants, fetches, denials, expiries, revocations");
  audit->add_option("--sandbox", f->sandbox, "Only lines about this sandbox");
  audit->add_option("--name", f->filter_name, "Only lines about this secret");
  audit->callback([&g, f] { secret_audit(g, *f); });
}

}  // namespace space::cli
