// Where the credential helper keeps its files. The credential directory is deliberately outside
// the run directory (--root), so that nothing under the root (the store, its image, every
// sandbox's disk, memory and checkpoint, the logs) can ever hold a secret, and a search of every
// file under the root proves it: $SPACE_CRED_DIR when set, else "<root>.cred" (a sibling of the
// root, e.g. /var/lib/space.cred), mode 0700. One helper serves one credential directory, and a
// credential directory belongs to one root. Inside it:
//   secrets.json    the secrets (0600, replaced atomically)
//   grants.json     which sandbox may fetch which name, until when, how often (0600, atomic)
//   audit.log       JSON lines, appended (0600); never a value
//   credd.sock      the operator socket (0600): `space secret/grant/revoke` talk to it
//   credd.lock      flock: at most one helper per directory
//   credd.log       the helper's stdout/stderr
// Each sandbox's requests arrive on <run base>/<id>/cred.sock, a socket in the sandbox's run
// directory (its jailed VMM dials it by name there: monitor/routes.h), open to the directory's
// group, which is the jail's.
#pragma once
#include <string>

namespace space::cred {

struct CredPaths {      // all absolute
  std::string dir;      // the credential directory
  std::string secrets;  // <dir>/secrets.json
  std::string grants;   // <dir>/grants.json
  std::string audit;    // <dir>/audit.log
  std::string sock;     // <dir>/credd.sock
  std::string lock;     // <dir>/credd.lock
  std::string log;      // <dir>/credd.log
};

// The credential directory for `root`: $SPACE_CRED_DIR if set and not empty, else "<root>.cred"
// (root made absolute, trailing slashes dropped). Throws if the root is "/".
std::string cred_dir_for_root(const std::string& root);
// The file names inside `dir` (absolute).
CredPaths cred_paths_in(const std::string& dir);
// cred_paths_in(cred_dir_for_root(root)).
CredPaths cred_paths(const std::string& root);
// <run base>/<id>/cred.sock, the socket the helper accepts sandbox `id`'s requests on. Validates
// id.
std::string sandbox_socket(const std::string& id);
// Throws with a hint unless credd.sock under `dir` fits in sun_path (108 bytes); the sockets of
// sandboxes are checked one by one by sandbox_socket().
void check_socket_paths(const std::string& dir);
// Creates `dir` (and its parents) with mode 0700; tightens an existing `dir` to 0700.
void make_cred_dir(const CredPaths& p);

}  // namespace space::cred
