// Unit tests for secrets bound to hosts (issue 42) in the credential helper, without sockets:
// --inject hosts are normalized; a binding gets a placeholder (kept when granted again), which a
// fetch returns instead of the value without spending a use; the broker's bindings say which
// placeholder is bound to a host; a swap returns the value only toward a bound host, spends a use
// and is audited with method and target but never the value; a branch's copy gets a new
// placeholder and a CA of its own; destroy removes the CA; grants.json keeps bindings across a
// restart; the swap reply's value travels as base64 and decodes into secret memory.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>

#include "cred/grants.h"
#include "cred/paths.h"
#include "cred/sandbox_ca.h"
#include "cred/service.h"
#include "cred/store.h"
#include "proto/credd.h"
#include "store/paths.h"
#include "store/state.h"
#include "support/cred_rig.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"

using namespace space;
using namespace space::cred;
namespace credd = space::proto::credd;

namespace {

struct Rig : test::CredRig {
  Rig() : CredRig({"a", "b"}) {
    SecretStore(p.secrets).set("TOKEN", "ghp_realvalue123", "2026-01-01T00:00:00Z");
  }
  std::string audit() const { return fs::read_file(p.audit, 1 << 20); }
};

}  // namespace

TEST_CASE("inject hosts are normalized, and bad ones refused with a hint") {
  CHECK(parse_inject_host("API.GitHub.com") == "api.github.com:443");
  CHECK(parse_inject_host("127.0.0.2:8443") == "127.0.0.2:8443");
  CHECK(parse_inject_host("[::1]:8443") == "[::1]:8443");
  CHECK(parse_inject_host("[::1]") == "[::1]:443");
  CHECK(split_inject_host("[::1]:8443") == std::pair<std::string, uint16_t>{"::1", 8443});
  CHECK_THROWS_AS(parse_inject_host("host:0"), Error);
  CHECK_THROWS_AS(parse_inject_host("host:99999"), Error);
  CHECK_THROWS_AS(parse_inject_host("ho st"), Error);
  CHECK_THROWS_AS(parse_inject_host("host:"), Error);
  CHECK_THROWS_AS(parse_inject_host(""), Error);
  CHECK(new_placeholder().rfind("space-placeholder-", 0) == 0);
  CHECK(new_placeholder().size() == 18 + 32);
  CHECK(new_placeholder() != new_placeholder());
}

TEST_CASE("a binding: placeholder to the guest, value only in a swap toward a bound host") {
  Rig rig;
  CredService& svc = *rig.svc;
  svc.handle(credd::GrantRequest{"a", "TOKEN", std::nullopt, 2, {"127.0.0.2:8443"}});
  CHECK(has_sandbox_ca(rig.p.dir, "a"));
  CHECK_FALSE(has_sandbox_ca(rig.p.dir, "b"));
  SandboxCa ca = sandbox_ca(rig.p.dir, "a");
  struct stat st {};
  REQUIRE(::stat(ca.key.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(fs::read_file(ca.cert, 1 << 16).find("BEGIN CERTIFICATE") != std::string::npos);

  CredService::Fetch f = svc.fetch("a", "TOKEN", "");
  REQUIRE(f.ok);
  const std::string token(f.value.view());
  CHECK(token.rfind("space-placeholder-", 0) == 0);
  // Granted again: the same placeholder (an exec's environment stays right).
  svc.handle(credd::GrantRequest{"a", "TOKEN", std::nullopt, 2, {"127.0.0.2:8443"}});
  CHECK(std::string(svc.fetch("a", "TOKEN", "").value.view()) == token);

  credd::BindingsReply here = svc.handle(credd::BindingsRequest{"a", "127.0.0.2", 8443});
  REQUIRE(here.placeholders.size() == 1);
  CHECK(here.placeholders[0].token == token);
  CHECK(here.placeholders[0].bound);
  credd::BindingsReply there = svc.handle(credd::BindingsRequest{"a", "127.0.0.3", 8443});
  REQUIRE(there.placeholders.size() == 1);
  CHECK_FALSE(there.placeholders[0].bound);
  CHECK_FALSE(there.elsewhere);
  CHECK(svc.handle(credd::BindingsRequest{"a", "127.0.0.2", 80}).elsewhere);  // plain HTTP there
  CHECK(svc.handle(credd::BindingsRequest{"b", "127.0.0.2", 8443}).placeholders.empty());

  // Toward another host, or from another sandbox: refused, audited.
  CHECK_THROWS_AS(svc.handle(credd::SwapRequest{"a", token, "127.0.0.3", 8443, "GET", "/"}), Error);
  CHECK_THROWS_AS(svc.handle(credd::SwapRequest{"b", token, "127.0.0.2", 8443, "GET", "/"}), Error);
  // Toward the bound host: the value, a use spent each time, then refused.
  auto v = svc.handle(credd::SwapRequest{"a", token, "127.0.0.2", 8443, "GET", "/repo?x=1"});
  CHECK(v.value.view() == "ghp_realvalue123");
  svc.handle(credd::SwapRequest{"a", token, "127.0.0.2", 8443, "POST", "/two"});
  CHECK_THROWS_WITH_AS(svc.handle(credd::SwapRequest{"a", token, "127.0.0.2", 8443, "GET", "/"}),
                       doctest::Contains("used up"), Error);
  const std::string log = rig.audit();
  CHECK(log.find("\"injected\"") != std::string::npos);
  CHECK(log.find("127.0.0.2:8443 GET /repo?x=1") != std::string::npos);
  CHECK(log.find("\"placeholder\"") != std::string::npos);
  CHECK(log.find("ghp_realvalue123") == std::string::npos);
  CHECK(fs::read_file(rig.p.grants, 1 << 20).find("ghp_realvalue123") == std::string::npos);

  // grants.json keeps the binding across a restart.
  CredService again(rig.root, rig.p, [&] { return rig.now; });
  CHECK(again.handle(credd::BindingsRequest{"a", "127.0.0.2", 8443}).placeholders.at(0).token ==
        token);
  CHECK(again.fetch("a", "TOKEN", "").code == proto::DenyCode::UsedUp);  // its uses are spent
  credd::GrantsReply gr = again.handle(credd::GrantsRequest{"a"});
  REQUIRE(gr.grants.size() == 1);
  CHECK(gr.grants[0].inject == std::vector<std::string>{"127.0.0.2:8443"});
}

TEST_CASE("a branch's copy of a binding gets its own placeholder and CA; destroy removes the CA") {
  Rig rig;
  CredService& svc = *rig.svc;
  svc.handle(credd::GrantRequest{"a", "TOKEN", std::nullopt, std::nullopt, {"api.test"}});
  const std::string ta(svc.fetch("a", "TOKEN", "").value.view());
  svc.handle(credd::CopyRequest{"a", "b"});
  const std::string tb(svc.fetch("b", "TOKEN", "").value.view());
  CHECK(tb.rfind("space-placeholder-", 0) == 0);
  CHECK(tb != ta);
  CHECK(has_sandbox_ca(rig.p.dir, "b"));
  CHECK(fs::read_file(sandbox_ca(rig.p.dir, "a").cert, 1 << 16) !=
        fs::read_file(sandbox_ca(rig.p.dir, "b").cert, 1 << 16));
  svc.handle(credd::RevokeAllRequest{"b", true, "destroy"});
  CHECK_FALSE(has_sandbox_ca(rig.p.dir, "b"));
  CHECK(has_sandbox_ca(rig.p.dir, "a"));
}

TEST_CASE("the swap reply's value: base64 on the line, secret memory at both ends") {
  credd::SwapReply r{SecretString("s3kr\nt\"x")};
  SecretString line = credd::encode_swap_reply(r);
  CHECK(line.view().find("s3kr") == std::string_view::npos);  // only base64 on the wire
  credd::SwapReply back = credd::decode_swap_reply(line.view());
  CHECK(back.value.view() == "s3kr\nt\"x");
  CHECK_THROWS_WITH_AS(credd::decode_swap_reply(R"({"ok":false,"error":"used up"})"),
                       doctest::Contains("used up"), Error);
  CHECK_THROWS_AS(credd::decode_swap_reply(R"({"ok":true})"), Error);
  // Requests round-trip through the line protocol.
  credd::Request q = credd::decode_request(
      credd::encode_request(credd::SwapRequest{"a", "t", "h", 443, "GET", "/x"}).view());
  CHECK(std::get<credd::SwapRequest>(q).target == "/x");
  q = credd::decode_request(
      credd::encode_request(credd::GrantRequest{"a", "N", std::nullopt, std::nullopt, {"h:1"}})
          .view());
  CHECK(std::get<credd::GrantRequest>(q).inject == std::vector<std::string>{"h:1"});
}
