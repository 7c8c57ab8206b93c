// The certificate authority of a sandbox with bindings (secrets bound to hosts, issue 42): the
// broker signs, with its key, the certificates it shows the sandbox for the bound hosts it
// intercepts; the sandbox trusts its certificate (core/inject.h puts it in the guest's trust
// store). The key never leaves the host: it lives in the credential directory, never under the
// root, as <cred dir>/ca/<sandbox>/ca.key (0600) beside ca.pem, and goes with the sandbox's
// grants (destroy). A branch, whose grants are its own, gets a CA of its own; a checkpoint keeps
// its sandbox's. A sandbox without bindings has none. An EC P-256 key, a self-signed certificate
// "space sandbox <id>" (CA:TRUE, pathlen 0, keyCertSign and cRLSign only) valid for 10 years,
// made with OpenSSL.
#pragma once
#include <string>

namespace space::cred {

struct SandboxCa {
  std::string dir, cert, key;  // absolute
};

// The CA's files for `sandbox` in credential directory `cred_dir` (which may not exist yet).
SandboxCa sandbox_ca(const std::string& cred_dir, const std::string& sandbox);
// Makes the CA of `sandbox` unless it has one (its files written atomically, the key 0600).
// Returns its files. Throws Error naming OpenSSL's reason on failure.
SandboxCa ensure_sandbox_ca(const std::string& cred_dir, const std::string& sandbox);
// Whether `sandbox` has a CA.
bool has_sandbox_ca(const std::string& cred_dir, const std::string& sandbox);
// Removes the CA of `sandbox`, if any. Never throws (it logs).
void remove_sandbox_ca(const std::string& cred_dir, const std::string& sandbox) noexcept;

}  // namespace space::cred
