// Secrets bound to hosts, the core's part (issue 42): before a binding is granted, every host it
// names must be allowed by the sandbox's network policy (else the grant fails, naming the rule to
// add); once granted, the sandbox's CA (cred/sandbox_ca.h, made by the credential helper) goes
// into the guest's trust store: appended to /etc/ssl/certs/ca-certificates.crt (made if the image
// has none) and alone at /etc/space/ca.pem, through guest-init's file channel (core/copy.h); and
// every exec of such a sandbox gets SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE and
// GIT_SSL_CAINFO pointing at that bundle and NODE_EXTRA_CA_CERTS at the CA alone, under what the
// user passes with -e. grant_secrets() is the one way a grant is made: create, run, `space
// grant`.
#pragma once
#include <string>
#include <vector>

#include "cred/grants.h"
#include "store/context.h"

namespace space::core {

// Where the guest finds the CA: the bundle, and the CA alone.
inline constexpr const char* kGuestCaBundle = "/etc/ssl/certs/ca-certificates.crt";
inline constexpr const char* kGuestCa = "/etc/space/ca.pem";

// Grants `specs` to running sandbox `id`: the bindings' hosts checked against its policy first,
// then the grants (cred::grant_secrets), then, if any is a binding, its CA installed in the guest.
// Throws Error with a hint.
void grant_secrets(const store::Context& ctx, const std::string& id,
                   const std::vector<cred::GrantSpec>& specs);
// Puts sandbox `id`'s CA into its guest's trust store (a no-op when it has no CA, or it is there).
void install_sandbox_ca(const store::Context& ctx, const std::string& id);
// The environment an exec in sandbox `id` gets for its CA ("K=V"); none without a CA.
std::vector<std::string> ca_environment(const store::Context& ctx, const std::string& id);

}  // namespace space::core
