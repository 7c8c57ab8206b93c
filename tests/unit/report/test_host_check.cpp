// Unit tests for report/host_check's rendering: a report made by hand (no host inspected) as JSON
// and as text: usable only without problems, the jail's keys, and what each of the VMM's thread
// roles may call (jail::allowed_syscalls), which check shows in full.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "report/host_check.h"
#include "util/json.h"

using namespace space;

namespace {
std::vector<std::string> names_of(const json::Value& array) {
  std::vector<std::string> out;
  for (const auto& v : array.as_array()) out.push_back(v.as_string());
  return out;
}
bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

TEST_CASE("check's JSON: usable without problems, and each thread role's allowed system calls") {
  report::HostReport r;
  r.host = "pvm";
  r.jail_uids = "1000..1999";
  r.namespaces = "ok";
  r.seccomp = "ok";
  json::Value v = report::host_report_json(r);
  CHECK(v.at("usable").as_bool());
  CHECK(v.at("host").as_string() == "pvm");
  const json::Value& jail = v.at("jail");
  CHECK(jail.at("seccomp").as_string() == "ok");
  const json::Value& allowed = jail.at("seccomp_allowed");
  auto vmm = names_of(allowed.at("vmm"));
  auto vcpu = names_of(allowed.at("vcpu"));
  auto init = names_of(allowed.at("init"));
  // KVM is driven by ioctl from both VMM roles; none of them may start a program.
  CHECK(has(vmm, "ioctl"));
  CHECK(has(vcpu, "ioctl"));
  for (const auto* list : {&vmm, &vcpu, &init}) {
    CHECK_FALSE(list->empty());
    CHECK(std::is_sorted(list->begin(), list->end()));
    CHECK_FALSE(has(*list, "ptrace"));
  }
  CHECK_FALSE(has(vmm, "execve"));
  CHECK_FALSE(has(vcpu, "execve"));
  CHECK(vcpu.size() < vmm.size());  // a vCPU thread runs its guest and little else

  r.problems.push_back("no /dev/kvm");
  CHECK_FALSE(report::host_report_json(r).at("usable").as_bool());
  std::string text = report::host_report_text(r);
  CHECK(text.find("\nproblem       no /dev/kvm\n") != std::string::npos);
  CHECK(text.find("\nusable        no\n") != std::string::npos);
  CHECK(text.find("seccomp ok (kill on any call a role does not list)") != std::string::npos);
}
