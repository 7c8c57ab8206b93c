// Where the network broker keeps its files. Policies and audit logs sit under the run directory
// but outside every sandbox's subvolume, so neither the guest nor (once jailed) its VMM can
// rewrite them: <root>/egress/policy/<id>.json is the sandbox's policy (absent: no network) and
// <root>/egress/audit/<id>.log its JSON-lines audit log, kept after destroy for inspection. The
// broker's own files: egress.lock (flock: one broker per root), egress.log (its output), and the
// operator socket under the short run base (sun_path is 108 bytes), named after a hash of the
// root. Each sandbox's guest connections arrive on <run base>/<id>/egress.sock, a socket the
// broker listens on and the sandbox's VMM dials: who is asking comes from the socket.
#pragma once
#include <string>

namespace space::egress {

struct EgressPaths {     // all absolute
  std::string dir;       // <root>/egress
  std::string policies;  // <dir>/policy
  std::string audits;    // <dir>/audit
  std::string lock;      // <dir>/egress.lock
  std::string log;       // <dir>/egress.log
  std::string sock;      // <run base>/egress-<hash of root>.sock: the operator socket
};

// The broker's paths for run directory `root` (made absolute).
EgressPaths egress_paths(const std::string& root);
// <policies>/<id>.json. Validates id.
std::string policy_file(const EgressPaths& p, const std::string& id);
// <audits>/<id>.log. Validates id.
std::string audit_file(const EgressPaths& p, const std::string& id);
// <run base>/<id>/egress.sock: where the broker takes sandbox `id`'s connections.
std::string sandbox_socket(const std::string& id);
// Creates dir, policies and audits (mode 0700).
void make_egress_dirs(const EgressPaths& p);

}  // namespace space::egress
