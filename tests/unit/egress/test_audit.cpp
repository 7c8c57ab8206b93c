// Unit tests for egress/audit: the audit line's fields; AuditLog on a test clock: connections
// made always written, refusals within the sandbox's budget one by one and beyond it counted by
// kind (deny and error apart), the counts written when their window passes or at exit; and each
// file kept within its bound, rotated, its marker counting what it dropped.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "egress/audit.h"
#include "egress/paths.h"
#include "support/temp_dir.h"
#include "util/fs.h"
#include "util/json_lines.h"

using namespace space;
using namespace space::egress;

namespace {

AuditRecord refusal(const std::string& decision, const std::string& kind, int i) {
  AuditRecord r;
  r.sandbox = "s1";
  r.host = "h" + std::to_string(i) + ".example.com";
  r.port = 443;
  r.decision = decision;
  r.kind = kind;
  r.reason = "no rule allows " + r.host + ":443";
  return r;
}

}  // namespace

TEST_CASE("egress audit lines: the fields, and count and kind only on a line standing for others") {
  AuditRecord r = refusal("deny", "not allowed by the policy", 1);
  r.time_ms = 1'700'000'000'123;
  json::Value v = audit_value(r);
  CHECK(v.at("time").as_string() == "2023-11-14T22:13:20.123Z");
  CHECK(v.at("host").as_string() == "h1.example.com");
  CHECK(v.find("kind") == nullptr);
  CHECK(v.find("count") == nullptr);
  r.count = 7;
  v = audit_value(r);
  CHECK(v.at("kind").as_string() == "not allowed by the policy");
  CHECK(v.at("count").as_int() == 7);
  CHECK(v.find("engine") == nullptr);  // unknown: left out
  r.engine = "gvisor";
  CHECK(audit_value(r).at("engine").as_string() == "gvisor");
}

TEST_CASE("AuditLog: connections made one by one, refusals within a budget, the rest counted") {
  test::TempDir d("egress");
  EgressPaths p = egress_paths(d.path + "/root");
  make_egress_dirs(p);
  uint64_t now = 1'700'000'000'000;
  AuditLog log(p, kAuditMaxBytes, [&] { return now; });
  for (int i = 0; i < 1000; i++) log.record(refusal("deny", "not allowed by the policy", i));
  for (int i = 0; i < 10; i++) log.record(refusal("error", "cannot resolve", i));
  AuditRecord made;
  made.sandbox = "s1";
  made.host = "pypi.org";
  made.decision = "allow";
  for (int i = 0; i < 50; i++) log.record(made);  // never throttled
  const std::string file = audit_file(p, "s1");
  // 20 denials (the burst), the first failure of its kind, the 50 connections.
  CHECK(jsonl::read(file).size() == 20 + 1 + 50);
  now += 60'000;
  log.record(made);  // a later record writes the counts whose window passed, first
  auto lines = jsonl::read(file);
  REQUIRE(lines.size() == 20 + 1 + 50 + 2 + 1);
  const json::Value& denied = lines[lines.size() - 3];
  CHECK(denied.at("decision").as_string() == "deny");
  CHECK(denied.at("kind").as_string() == "not allowed by the policy");
  CHECK(denied.at("count").as_int() == 980);
  CHECK(denied.at("reason").as_string() ==
        "denied 980 requests of kind 'not allowed by the policy' from sandbox s1 in the last 60 s "
        "(not audited one by one)");
  const json::Value& failed = lines[lines.size() - 2];
  CHECK(failed.at("decision").as_string() == "error");
  CHECK(failed.at("kind").as_string() == "cannot resolve");
  CHECK(failed.at("count").as_int() == 9);
  CHECK(failed.at("reason").as_string().find("failed 9 requests of kind 'cannot resolve'") == 0);
  // At exit, every count, however recent (the sandbox was quiet for a window: a new burst).
  for (int i = 0; i < 25; i++) log.record(refusal("deny", "not allowed by the policy", i));
  size_t before = jsonl::read(file).size();
  log.flush(false);
  CHECK(jsonl::read(file).size() == before);
  log.flush(true);
  CHECK(jsonl::read(file).size() == before + 1);
}

TEST_CASE("AuditLog: each file within its bound, rotated, the marker counting what it dropped") {
  test::TempDir d("egress");
  EgressPaths p = egress_paths(d.path + "/root");
  make_egress_dirs(p);
  AuditLog log(p, 16 * 1024, [] { return uint64_t{1'700'000'000'000}; });
  AuditRecord made;
  made.sandbox = "s1";
  made.host = "pypi.org";
  made.port = 443;
  made.decision = "allow";
  for (int i = 0; i < 1000; i++) log.record(made);
  const std::string file = audit_file(p, "s1");
  CHECK(fs::read_file(file).size() <= 16 * 1024);
  CHECK(fs::read_file(jsonl::previous(file)).size() <= 16 * 1024);
  auto lines = jsonl::read_generations(file);
  size_t markers = 0;
  for (const auto& l : lines) {
    if (l.at("decision").as_string() != "rotated") continue;
    markers++;
    CHECK(l.at("count").as_int() > 0);
    CHECK(l.at("reason").as_string().find("s1.log.1") != std::string::npos);
  }
  CHECK(markers == 2);
  struct stat st {};
  REQUIRE(::stat(jsonl::previous(file).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}
