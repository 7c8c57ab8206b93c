// Credential directory layout; see paths.h.
#include "cred/paths.h"

#include <sys/stat.h>
#include <sys/un.h>

#include <cstdlib>

#include "store/paths.h"
#include "util/error.h"
#include "util/fs.h"

namespace space::cred {

namespace {
constexpr size_t kSunPath = sizeof(sockaddr_un{}.sun_path);
}  // namespace

std::string cred_dir_for_root(const std::string& root) {
  const char* env = std::getenv("SPACE_CRED_DIR");
  std::string dir;
  if (env && *env) {
    dir = fs::absolute(env);
  } else {
    std::string r = fs::absolute(root);
    while (r.size() > 1 && r.back() == '/') r.pop_back();
    if (r == "/")
      fail("--root / leaves no place for the credential directory", "set SPACE_CRED_DIR");
    dir = r + ".cred";
  }
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

CredPaths cred_paths_in(const std::string& dir) {
  CredPaths p;
  p.dir = dir;
  p.secrets = dir + "/secrets.json";
  p.grants = dir + "/grants.json";
  p.audit = dir + "/audit.log";
  p.sock = dir + "/credd.sock";
  p.lock = dir + "/credd.lock";
  p.log = dir + "/credd.log";
  return p;
}

CredPaths cred_paths(const std::string& root) {
  return cred_paths_in(cred_dir_for_root(root));
}

std::string sandbox_socket(const std::string& id) {
  return store::sandbox_run_dir(id) + "/cred.sock";
}

void check_socket_paths(const std::string& dir) {
  // credd.sock must fit (a sandbox's socket fits when its run directory's sockets do).
  if (dir.size() + std::string("/credd.sock").size() >= kSunPath)
    fail("credential directory " + dir + " is too long for its sockets (sun_path is " +
             std::to_string(kSunPath) + " bytes)",
         "set SPACE_CRED_DIR to a shorter directory, e.g. /var/lib/space.cred");
}

void make_cred_dir(const CredPaths& p) {
  fs::ensure_private_dir(p.dir, 0700);
  if (::chmod(p.dir.c_str(), 0700) != 0) throw_errno("chmod " + p.dir);
}

}  // namespace space::cred
