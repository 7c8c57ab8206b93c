// The broker's file layout; see paths.h.
#include "egress/paths.h"

#include <cstdint>
#include <cstdio>

#include "store/paths.h"
#include "util/fs.h"

namespace space::egress {

namespace {
// FNV-1a, 64 bits: a short, stable name for a root in the shared run base.
std::string root_tag(const std::string& root) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : root) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 12);
}
}  // namespace

EgressPaths egress_paths(const std::string& root) {
  std::string r = fs::absolute(root);
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  EgressPaths p;
  p.dir = r + "/egress";
  p.policies = p.dir + "/policy";
  p.audits = p.dir + "/audit";
  p.lock = p.dir + "/egress.lock";
  p.log = p.dir + "/egress.log";
  p.sock = store::run_base() + "/egress-" + root_tag(r) + ".sock";
  return p;
}

std::string policy_file(const EgressPaths& p, const std::string& id) {
  return store::sandbox_entry(p.policies, id, ".json");
}

std::string audit_file(const EgressPaths& p, const std::string& id) {
  return store::sandbox_entry(p.audits, id, ".log");
}

std::string sandbox_socket(const std::string& id) {
  return store::sandbox_run_dir(id) + "/egress.sock";
}

void make_egress_dirs(const EgressPaths& p) {
  fs::mkdir_p(p.policies, 0700);
  fs::mkdir_p(p.audits, 0700);
}

}  // namespace space::egress
