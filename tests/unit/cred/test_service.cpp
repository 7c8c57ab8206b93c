// The credential helper's host-side parts, without sockets or VMs: the credential directory
// layout, base64, grant specs and durations, the grant table (ttl and uses with an injected
// clock, revocation, expiry logged once, strict JSON), the audit line format, the secret store
// (mode 0600, limits, reload) and CredService's decisions end to end (grant, fetch, deny, audit),
// checking that no value ever reaches grants.json or the audit log.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cred/audit.h"
#include "cred/base64.h"
#include "cred/grants.h"
#include "cred/paths.h"
#include "cred/service.h"
#include "cred/store.h"
#include "store/paths.h"
#include "store/state.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"

using namespace space;
using namespace space::cred;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/space-test-cred-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { fs::remove_tree(path); }
};

mode_t mode_of(const std::string& p) {
  struct stat st{};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// A sandbox directory with a state.json whose VMM is this test process.
void fake_sandbox(const std::string& root, const std::string& id) {
  auto p = store::sandbox_paths(root, id);
  fs::mkdir_p(p.dir);
  store::SandboxState st;
  st.id = id;
  st.status = "running";
  st.pid = ::getpid();
  st.pid_start_time = *proc::start_time(::getpid());
  st.created = store::rfc3339_now();
  store::write_state(p.state, st);
}

}  // namespace

TEST_CASE("the credential directory sits beside the root, or at $SPACE_CRED_DIR") {
  ::unsetenv("SPACE_CRED_DIR");
  CHECK(cred_dir_for_root("/var/lib/space") == "/var/lib/space.cred");
  CHECK(cred_dir_for_root("/var/lib/space/") == "/var/lib/space.cred");
  CHECK_THROWS_AS(cred_dir_for_root("/"), Error);
  ::setenv("SPACE_CRED_DIR", "/srv/cred/", 1);
  CHECK(cred_dir_for_root("/var/lib/space") == "/srv/cred");
  ::unsetenv("SPACE_CRED_DIR");
  auto p = cred_paths_in("/c");
  CHECK(p.secrets == "/c/secrets.json");
  CHECK(p.grants == "/c/grants.json");
  CHECK(p.audit == "/c/audit.log");
  CHECK(p.sock == "/c/credd.sock");
  CHECK(sandbox_socket("/c", "abc") == "/c/s/abc.sock");
  CHECK_THROWS_AS(sandbox_socket("/c", "../x"), Error);
  CHECK_THROWS_AS(sandbox_socket("/" + std::string(100, 'd'), "abc"), Error);
  CHECK_NOTHROW(check_socket_paths("/var/lib/space.cred"));
  CHECK_NOTHROW(check_socket_paths("/" + std::string(60, 'd')));
  CHECK_THROWS_AS(check_socket_paths("/" + std::string(100, 'd')), Error);
}

TEST_CASE("base64 round-trips any bytes and refuses non-canonical text") {
  for (std::string s : {std::string(), std::string("a"), std::string("ab"), std::string("abc"),
                        std::string("\0\xff\x10 secret\n", 11)}) {
    auto e = base64_encode(s);
    CHECK(e.size() % 4 == 0);
    CHECK(base64_decode(e) == s);
  }
  CHECK(base64_encode("hunter2") == "aHVudGVyMg==");
  CHECK_FALSE(base64_decode("aHVudGVyMg="));   // length
  CHECK_FALSE(base64_decode("aHVu dGVy"));     // whitespace
  CHECK_FALSE(base64_decode("aHVudGVyMh=="));  // non-zero padding bits
  CHECK_FALSE(base64_decode("a=bc"));
}

TEST_CASE("grant specs: NAME[:ttl=DURATION][:uses=N]") {
  auto g = parse_grant_spec("API_TOKEN");
  CHECK(g.name == "API_TOKEN");
  CHECK_FALSE(g.ttl_ms);
  CHECK_FALSE(g.uses);
  g = parse_grant_spec("db.pw:ttl=10m:uses=3");
  CHECK(g.name == "db.pw");
  CHECK(*g.ttl_ms == 600'000);
  CHECK(*g.uses == 3);
  CHECK(*parse_grant_spec("X:uses=1:ttl=2s").ttl_ms == 2000);
  CHECK(parse_duration_ms("30s") == 30'000);
  CHECK(parse_duration_ms("2h") == 7'200'000);
  CHECK(parse_duration_ms("1d") == 86'400'000);
  for (const char* bad : {"", ":ttl=1s", "a/b", "X:ttl=", "X:ttl=5", "X:ttl=0s", "X:ttl=-1s",
                          "X:ttl=1w", "X:uses=0", "X:uses=x", "X:ttl=1s:ttl=2s", "X:foo=1",
                          "X:ttl=99999999d"})
    CHECK_THROWS_AS(parse_grant_spec(bad), Error);
  CHECK(format_duration_ms(2000) == "2s");
  CHECK(format_duration_ms(5'400'000) == "1h30m");
}

TEST_CASE("grant table: ttl and uses against an injected clock") {
  GrantTable t;
  t.grant("a", parse_grant_spec("T:ttl=2s:uses=2"), 1'000'000);
  CHECK(t.check("a", "T", 1'000'000) == Verdict::Allow);
  CHECK(t.check("b", "T", 1'000'000) == Verdict::NotGranted);  // another sandbox
  CHECK(t.check("a", "U", 1'000'000) == Verdict::NotGranted);  // another name
  CHECK(t.consume("a", "T", 1'000'500) == Verdict::Allow);
  CHECK(t.consume("a", "T", 1'001'000) == Verdict::Allow);
  CHECK(t.consume("a", "T", 1'001'000) == Verdict::UsedUp);
  CHECK(t.check("a", "T", 1'002'000) == Verdict::Expired);
  CHECK(t.next_expiry() == 1'002'000u);
  CHECK(t.newly_expired(1'001'999).empty());
  auto e = t.newly_expired(1'002'000);
  REQUIRE(e.size() == 1);
  CHECK(e[0] == std::pair<std::string, std::string>("a", "T"));
  CHECK(t.newly_expired(1'009'000).empty());  // logged once
  CHECK_FALSE(t.next_expiry());
  // A new grant of the same name replaces the old one.
  t.grant("a", parse_grant_spec("T"), 2'000'000);
  CHECK(t.check("a", "T", 9'000'000'000) == Verdict::Allow);
  CHECK(t.grants_of("a").size() == 1);
}

TEST_CASE("grant table: revoke, revoke all, forget, and strict JSON") {
  GrantTable t;
  t.grant("a", parse_grant_spec("X"), 1);
  t.grant("a", parse_grant_spec("Y:uses=1"), 1);
  t.grant("b", parse_grant_spec("X:ttl=1m"), 1);
  CHECK(t.revoke("a", "X"));
  CHECK_FALSE(t.revoke("a", "X"));
  CHECK(t.check("a", "X", 2) == Verdict::NotGranted);
  auto back = GrantTable::from_json(json::parse(json::serialize(t.to_json())));
  CHECK(back.check("a", "Y", 2) == Verdict::Allow);
  CHECK(back.check("b", "X", 60'000) == Verdict::Allow);
  CHECK(back.check("b", "X", 60'001) == Verdict::Expired);
  CHECK(t.revoke_all("a", false) == std::vector<std::string>{"Y"});
  CHECK(t.has_sandbox("a"));  // keeps its socket: a fetch gets "not granted"
  t.revoke_all("b", true);
  CHECK_FALSE(t.has_sandbox("b"));
  CHECK_THROWS_AS(GrantTable::from_json(json::parse(R"({"sandboxes":{"a":[{"name":"X","granted_ms":1,"extra":1}]}})")), Error);
  CHECK_THROWS_AS(GrantTable::from_json(json::parse(R"({"sandboxes":{"../a":[]}})")), Error);
  CHECK_THROWS_AS(GrantTable::from_json(json::parse(R"({"sandboxes":{"a":[{"name":"X","granted_ms":1},{"name":"X","granted_ms":1}]}})")), Error);
}

TEST_CASE("audit lines: time, sandbox, name, outcome, detail; appended with mode 0600") {
  CHECK(rfc3339_ms(1'700'000'000'123) == "2023-11-14T22:13:20.123Z");
  auto line = audit_line({1'700'000'000'123, "sb", "TOKEN", "denied", "expired"});
  CHECK(line == R"({"time":"2023-11-14T22:13:20.123Z","sandbox":"sb","name":"TOKEN","outcome":"denied","detail":"expired"})");
  CHECK(audit_line({0, "", "T", "set", ""}) == R"({"time":"1970-01-01T00:00:00.000Z","sandbox":null,"name":"T","outcome":"set"})");
  TempDir d;
  std::string path = d.path + "/audit.log";
  audit_append(path, {1, "a", "X", "granted", ""});
  audit_append(path, {2, "a", "X", "fetched", ""});
  CHECK(mode_of(path) == 0600);
  auto lines = audit_read(path);
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].at("outcome").as_string() == "fetched");
}

TEST_CASE("secret store: set, get, list, remove; mode 0600; limits; reload") {
  TempDir d;
  std::string path = d.path + "/secrets.json";
  {
    SecretStore s(path);
    CHECK_FALSE(s.set("A", std::string("v\0\xff", 3), "t1"));
    CHECK(s.set("A", "value-2", "t2"));
    CHECK_FALSE(s.set("B", "", "t3"));
    CHECK_THROWS_AS(s.set("bad/name", "x", "t"), Error);
    CHECK_THROWS_AS(s.set("BIG", std::string(64 * 1024 + 1, 'x'), "t"), Error);
    CHECK_NOTHROW(s.set("MAX", std::string(64 * 1024, 'x'), "t"));
  }
  CHECK(mode_of(path) == 0600);
  SecretStore s(path);
  CHECK(s.get("A")->bytes == "value-2");
  CHECK(s.get("B")->bytes.empty());
  CHECK_FALSE(s.get("C"));
  auto l = s.list();
  REQUIRE(l.size() == 3);
  CHECK(l[0].name == "A");
  CHECK(l[0].size == 7);
  CHECK(l[0].created == "t1");
  CHECK(l[0].updated == "t2");
  CHECK(s.remove("A"));
  CHECK_FALSE(s.remove("A"));
  CHECK_FALSE(SecretStore(path).contains("A"));
  fs::write_file_atomic(path, R"({"secrets":[{"name":"A","value_base64":"!!","size":0,"created":"","updated":""}]})", 0600);
  CHECK_THROWS_AS(SecretStore{path}, Error);
}

TEST_CASE("CredService: grants, fetches and denials, all audited, no value outside secrets.json") {
  TempDir d;
  ::unsetenv("SPACE_CRED_DIR");
  std::string root = d.path + "/root";
  fake_sandbox(root, "a");
  fake_sandbox(root, "b");
  CredPaths p = cred_paths(root);
  make_cred_dir(p);
  uint64_t now = 1'700'000'000'000;
  CredService svc(root, p, [&] { return now; });
  auto op = [&](json::Value req) { return svc.handle(req); };
  auto req = [](std::initializer_list<std::pair<const char*, json::Value>> kv) {
    json::Value v = json::Value::object();
    for (auto& [k, x] : kv) v.set(k, x);
    return v;
  };
  const std::string value = "s3cr3t-VALUE-0123456789";
  CHECK(op(req({{"op", "set"}, {"name", "T"}, {"value_base64", base64_encode(value)}})).at("ok").as_bool());
  CHECK(op(req({{"op", "set"}, {"name", "U"}, {"value_base64", base64_encode("u")}})).at("ok").as_bool());
  // Grants need an existing sandbox and an existing secret.
  CHECK_FALSE(op(req({{"op", "grant"}, {"sandbox", "zz"}, {"name", "T"}})).at("ok").as_bool());
  CHECK_FALSE(op(req({{"op", "grant"}, {"sandbox", "a"}, {"name", "NOPE"}})).at("ok").as_bool());
  CHECK(op(req({{"op", "grant"}, {"sandbox", "a"}, {"name", "T"}, {"uses", 2}, {"ttl_ms", 5000}})).at("ok").as_bool());
  CHECK(op(req({{"op", "grant"}, {"sandbox", "b"}, {"name", "U"}})).at("ok").as_bool());
  CHECK(svc.socket_sandboxes() == std::vector<std::string>{"a", "b"});

  auto f = svc.fetch("a", "T", "");
  CHECK(f.ok);
  CHECK(f.value.bytes == value);
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
  CHECK(op(req({{"op", "revoke"}, {"sandbox", "b"}, {"all", true}, {"forget", true}})).at("ok").as_bool());
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

TEST_CASE("CredService::check_peer accepts only the sandbox's recorded VMM") {
  TempDir d;
  std::string root = d.path + "/root";
  fake_sandbox(root, "a");
  CredService svc(root, cred_paths_in(d.path + "/c"), [] { return uint64_t{1}; });
  CHECK(svc.check_peer("a", ::getpid()) == "");
  CHECK(svc.check_peer("a", 1).find("not from the VMM") != std::string::npos);
  CHECK_FALSE(svc.check_peer("nosuch", ::getpid()).empty());
}
