// Unit tests for cred/service without sockets or VMs: CredService's decisions end to end (grant,
// fetch, deny, audit), checking that no value ever reaches grants.json or the audit log, its
// check that a fetch comes from the sandbox's recorded VMM, and what bounds a hostile sandbox
// (the fetch rate limit, denials past a budget counted by kind whatever names they ask for, the
// audit log's bound, no grants.json write per unlimited fetch).
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <memory>

#include "cred/audit.h"
#include "cred/paths.h"
#include "cred/service.h"
#include "store/paths.h"
#include "store/state.h"
#include "support/checks.h"
#include "support/cred_rig.h"
#include "support/temp_dir.h"
#include "util/base64.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_lines.h"
#include "util/process.h"

using namespace space;
using space::test::mode_of;
using namespace space::cred;

namespace {

using ServiceRig = test::CredRig;
using test::self_sandbox;

}  // namespace

TEST_CASE("CredService: grants, fetches and denials, all audited, no value outside secrets.json") {
  ServiceRig rig;
  const std::string& root = rig.root;
  CredPaths& p = rig.p;
  uint64_t& now = rig.now;
  CredService& svc = *rig.svc;
  // Each request goes through the helper's whole path: a line in, decoded, handled, a line out.
  auto op = [&](json::Value req) {
    return json::parse(svc.handle_line(json::serialize(req)).view());
  };
  auto req = [](std::initializer_list<std::pair<const char*, json::Value>> kv) {
    json::Value v = json::Value::object();
    for (auto& [k, x] : kv) v.set(k, x);
    return v;
  };
  const std::string value = "s3cr3t-VALUE-0123456789";
  CHECK(op(req({{"op", "set"}, {"name", "T"}, {"value_base64", base64::encode(value)}}))
            .at("ok")
            .as_bool());
  CHECK(op(req({{"op", "set"}, {"name", "U"}, {"value_base64", base64::encode("u")}}))
            .at("ok")
            .as_bool());
  // Grants need an existing sandbox and an existing secret.
  CHECK_FALSE(op(req({{"op", "grant"}, {"sandbox", "zz"}, {"name", "T"}})).at("ok").as_bool());
  CHECK_FALSE(op(req({{"op", "grant"}, {"sandbox", "a"}, {"name", "NOPE"}})).at("ok").as_bool());
  CHECK(op(req({{"op", "grant"}, {"sandbox", "a"}, {"name", "T"}, {"uses", 2}, {"ttl_ms", 5000}}))
            .at("ok")
            .as_bool());
  CHECK(op(req({{"op", "grant"}, {"sandbox", "b"}, {"name", "U"}})).at("ok").as_bool());
  CHECK(svc.socket_sandboxes() == std::vector<std::string>{"a", "b"});
  // One sandbox's grants: an invalid id, or one naming neither a sandbox nor a grant, is an
  // error (not an empty list, which would read as "no grants").
  CHECK(op(req({{"op", "grants"}, {"sandbox", "a"}})).at("grants").as_array().size() == 1);
  json::Value bad = op(req({{"op", "grants"}, {"sandbox", "../a"}}));
  CHECK_FALSE(bad.at("ok").as_bool());
  CHECK(bad.at("error").as_string().find("invalid sandbox id") != std::string::npos);
  // Every request naming a sandbox is refused for an invalid id, before its handler runs.
  for (json::Value r :
       {req({{"op", "grant"}, {"sandbox", "A"}, {"name", "T"}}),
        req({{"op", "revoke"}, {"sandbox", "a/b"}, {"name", "T"}}),
        req({{"op", "revoke"}, {"sandbox", ""}, {"all", true}}),
        req({{"op", "copy"}, {"from", "a"}, {"to", ".."}}),
        req({{"op", "copy"}, {"from", "-a"}, {"to", "b"}}),
        req({{"op", "bindings"}, {"sandbox", "a b"}, {"host", "h"}, {"port", 443}})}) {
    CAPTURE(json::serialize(r));
    json::Value refused = op(r);
    CHECK_FALSE(refused.at("ok").as_bool());
    CHECK(refused.at("error").as_string().rfind("invalid sandbox id", 0) == 0);
  }
  CHECK(svc.socket_sandboxes() == std::vector<std::string>{"a", "b"});  // nothing changed
  json::Value none = op(req({{"op", "grants"}, {"sandbox", "zz"}}));
  CHECK_FALSE(none.at("ok").as_bool());
  CHECK(none.at("error").as_string() == "sandbox zz does not exist");

  auto f = svc.fetch("a", "T", "");
  CHECK(f.ok);
  CHECK(f.value.view() == value);
  CHECK(svc.fetch("b", "T", "").code == proto::DenyCode::NotGranted);  // A's secret, asked by B
  CHECK(svc.fetch("a", "U", "").code == proto::DenyCode::NotGranted);  // B's secret, asked by A
  CHECK(svc.fetch("a", "T", "pid 1 is not the VMM").code == proto::DenyCode::NotAllowed);
  CHECK(svc.fetch("a", "T", "").ok);
  CHECK(svc.fetch("a", "T", "").code == proto::DenyCode::UsedUp);
  now += 5000;
  CHECK(svc.fetch("a", "T", "").code == proto::DenyCode::Expired);
  CHECK(svc.sweep_expired() == std::nullopt);
  // Uses survive a restart of the helper (saved before the value is returned).
  CredService again(root, p, [&] { return now - 5000; });
  CHECK(again.fetch("a", "T", "").code == proto::DenyCode::UsedUp);
  // A removed secret: granted but gone.
  CHECK(op(req({{"op", "rm"}, {"name", "U"}})).at("ok").as_bool());
  CHECK(svc.fetch("b", "U", "").code == proto::DenyCode::NoSuchSecret);
  // Revoke, copy (branch --keep-secrets), forget (destroy).
  CHECK(op(req({{"op", "grant"}, {"sandbox", "a"}, {"name", "T"}})).at("ok").as_bool());
  CHECK(op(req({{"op", "copy"}, {"from", "a"}, {"to", "b"}})).at("copied").as_array().size() == 1);
  CHECK(svc.fetch("b", "T", "").ok);
  CHECK(op(req({{"op", "revoke"}, {"sandbox", "a"}, {"name", "T"}})).at("ok").as_bool());
  CHECK(svc.fetch("a", "T", "").code == proto::DenyCode::NotGranted);
  CHECK_FALSE(op(req({{"op", "revoke"}, {"sandbox", "a"}, {"name", "T"}})).at("ok").as_bool());
  CHECK(op(req({{"op", "revoke"}, {"sandbox", "b"}, {"all", true}, {"forget", true}}))
            .at("ok")
            .as_bool());
  CHECK(svc.socket_sandboxes() == std::vector<std::string>{"a"});
  // A new sandbox reusing the id of one whose grants were never revoked inherits nothing.
  CHECK(op(req({{"op", "grant"}, {"sandbox", "a"}, {"name", "T"}})).at("ok").as_bool());
  CHECK(svc.fetch("a", "T", "").ok);
  {
    auto sp = store::sandbox_paths(root, "a");
    auto st = store::read_state(sp.state);
    st.created = "2099-01-01T00:00:00Z";  // recreated with the same id
    store::write_state(sp.state, st);
  }
  CHECK(svc.fetch("a", "T", "").code == proto::DenyCode::NotGranted);
  // A sandbox that vanished loses its grants when the helper starts.
  CHECK(op(req({{"op", "grant"}, {"sandbox", "a"}, {"name", "T"}})).at("ok").as_bool());
  fs::remove_tree(store::sandbox_paths(root, "a").dir);
  svc.drop_vanished();
  CHECK(svc.socket_sandboxes().empty());

  std::string audit = fs::read_file(p.audit);
  for (const char* o : {"\"set\"", "\"granted\"", "\"fetched\"", "\"denied\"", "\"expired\"",
                        "\"revoked\"", "\"removed\"", "not granted", "used up", "is not the VMM",
                        "an earlier sandbox with this id"})
    CHECK(audit.find(o) != std::string::npos);
  CHECK(audit.find(value) == std::string::npos);
  CHECK(fs::read_file(p.grants).find(value) == std::string::npos);
  CHECK(fs::read_file(p.secrets).find(value) == std::string::npos);  // base64 there
  CHECK(mode_of(p.dir) == 0700);
  CHECK(mode_of(p.grants) == 0600);
}

TEST_CASE("CredService: a sandbox hammering the helper is rate-limited and audited in a line") {
  ServiceRig rig;
  CredPaths& p = rig.p;
  uint64_t& now = rig.now;
  CredService& svc = *rig.svc;
  auto line = [&](const std::string& l) { return json::parse(svc.handle_line(l).view()); };
  CHECK(line(R"({"op":"set","name":"T","value_base64":")" + base64::encode("v") + "\"}")
            .at("ok")
            .as_bool());
  CHECK(line(R"({"op":"grant","sandbox":"a","name":"T"})").at("ok").as_bool());
  CHECK(line(R"({"op":"grant","sandbox":"b","name":"T","uses":100})").at("ok").as_bool());
  auto ino = [&] {
    struct stat st {};
    REQUIRE(::stat(p.grants.c_str(), &st) == 0);
    return st.st_ino;
  };
  auto audit_lines = [&] {
    size_t n = 0;
    for (char c : fs::read_file(p.audit)) n += c == '\n';
    return n;
  };

  // An unlimited grant: fetches write nothing to grants.json (no rename, no fsync).
  auto before = ino();
  CHECK(svc.fetch("a", "T", "").ok);
  CHECK(ino() == before);
  // A counted grant: each fetch is recorded.
  CHECK(svc.fetch("b", "T", "").ok);
  CHECK(ino() != before);

  // A burst, then refusals: kFetchBurst in all at one instant (one was spent above).
  size_t ok = 1;
  for (int i = 0; i < 1000; i++) ok += svc.fetch("a", "T", "").ok;
  CHECK(ok == CredService::kFetchBurst);
  auto f = svc.fetch("a", "T", "");
  CHECK(f.code == proto::DenyCode::NotAllowed);
  CHECK(f.message.find("too many requests") != std::string::npos);
  CHECK(svc.fetch("b", "T", "").ok);  // another sandbox has its own budget
  now += 1000;                        // a second later: kFetchPerSecond more
  ok = 0;
  for (int i = 0; i < 100; i++) ok += svc.fetch("a", "T", "").ok;
  CHECK(ok == CredService::kFetchPerSecond);

  // Over a thousand refusals, yet the log holds a few lines of them and not a line each: a
  // burst of 20 and then one a second (the audit throttle), and the rest as a count.
  size_t lines = audit_lines();
  CHECK(lines == 3 + 42 + 20 + 1);  // set, grants; fetches; denials
  // Another sandbox's denials have their own budget, whatever names they ask for.
  for (int i = 0; i < 25; i++)
    CHECK(svc.fetch("c", "NOPE-" + std::to_string(i), "").code == proto::DenyCode::NotGranted);
  CHECK(audit_lines() == lines + 20);
  now += CredService::kDenialWindowMs;
  svc.sweep_expired();  // the window passed: the counts are written
  std::string audit = fs::read_file(p.audit);
  CHECK(audit.find("denied 5 requests of kind 'not granted' from sandbox c in the last 60 s") !=
        std::string::npos);
  CHECK(audit.find("denied 1041 requests of kind 'rate limited' from sandbox a in the last 61 s") !=
        std::string::npos);
  CHECK(audit_lines() == lines + 20 + 2);
}

TEST_CASE("CredService: 5000 denials with distinct names leave a bounded log that counts them") {
  ServiceRig rig;
  CredPaths& p = rig.p;
  uint64_t& now = rig.now;
  CredService& svc = *rig.svc;
  // A hostile guest asks for a new name each time (so that no two requests look alike), a
  // request a millisecond: a few pass the fetch rate limit and are not granted, most are not.
  std::map<std::string, uint64_t> refused;  // by the audit detail they get
  for (int i = 0; i < 5000; i++, now++) {
    auto f = svc.fetch("a", "NAME-" + std::to_string(i), "");
    REQUIRE_FALSE(f.ok);
    refused[f.code == proto::DenyCode::NotGranted ? "not granted" : "rate limited"]++;
  }
  CHECK(refused["not granted"] > 0);
  CHECK(refused["rate limited"] > 0);
  svc.flush_audit();  // as the helper does when it exits

  // Every refusal is in the log, on a line of its own or in a count by kind, and the log holds
  // a few dozen lines, not 5,000.
  auto lines = audit_read(p.audit);
  CHECK(lines.size() < 40);
  std::map<std::string, uint64_t> alone, counted;
  for (const auto& l : lines) {
    REQUIRE(l.at("outcome").as_string() == "denied");
    const std::string detail = l.at("detail").as_string();
    if (const json::Value* c = l.find("count")) {
      for (const char* kind : {"not granted", "rate limited"})
        if (detail.find("denied " + std::to_string(c->as_int()) + " requests of kind '" + kind +
                        "' from sandbox a in the last") == 0)
          counted[kind] += uint64_t(c->as_int());
    } else {
      alone[detail]++;
    }
  }
  for (const char* kind : {"not granted", "rate limited"}) {
    CAPTURE(kind);
    CHECK(alone[kind] > 0);
    CHECK(counted[kind] > 0);  // an aggregate line with the right count
    CHECK(alone[kind] + counted[kind] == refused[kind]);
  }
  CHECK(fs::read_file(p.audit).size() < (8u << 20));  // the default bound
}

TEST_CASE("CredService: the audit log keeps to its bound, rotated, and says what it dropped") {
  ServiceRig rig;
  CredService svc(
      rig.root, rig.p, [&] { return rig.now; }, 4096);
  // Operator events are never throttled: 200 of them fill 4 KiB several times over.
  for (int i = 0; i < 100; i++) {
    CHECK(json::parse(svc.handle_line(R"({"op":"set","name":"N)" + std::to_string(i) +
                                      R"(","value_base64":"dg=="})")
                          .view())
              .at("ok")
              .as_bool());
    CHECK(
        json::parse(svc.handle_line(R"({"op":"rm","name":"N)" + std::to_string(i) + R"("})").view())
            .at("ok")
            .as_bool());
  }
  CHECK(fs::read_file(rig.p.audit).size() <= 4096);
  CHECK(fs::read_file(jsonl::previous(rig.p.audit)).size() <= 4096);
  auto lines = audit_read(rig.p.audit);
  REQUIRE(lines.size() > 2);
  CHECK(lines.back().at("name").as_string() == "N99");
  CHECK(lines.back().at("outcome").as_string() == "removed");
  size_t markers = 0;
  for (const auto& l : lines)
    if (l.at("outcome").as_string() == "rotated") {
      markers++;
      CHECK(l.at("count").as_int() > 0);
      CHECK(l.at("detail").as_string().find("audit.log.1") != std::string::npos);
    }
  CHECK(markers == 2);  // each generation opens with one
}

TEST_CASE("CredService::check_peer accepts only the sandbox's recorded VMM") {
  test::TempDir d("cred");
  std::string root = d.path + "/root";
  self_sandbox(root, "a");
  CredService svc(root, cred_paths_in(d.path + "/c"), [] { return uint64_t{1}; });
  CHECK(svc.check_peer("a", ::getpid()) == "");
  CHECK(svc.check_peer("a", 1).find("not from the VMM") != std::string::npos);
  CHECK_FALSE(svc.check_peer("nosuch", ::getpid()).empty());
}
