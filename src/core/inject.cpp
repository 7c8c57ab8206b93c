// Secrets bound to hosts, the core's part; see inject.h.
#include "core/inject.h"

#include <stdlib.h>

#include <cctype>
#include <cerrno>

#include "core/copy.h"
#include "core/net.h"
#include "cred/hooks.h"
#include "cred/paths.h"
#include "cred/sandbox_ca.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/scratch_dir.h"

namespace space::core {

namespace {

void check_hosts_allowed(const store::Context& ctx, const std::string& id,
                         const std::vector<cred::GrantSpec>& specs) {
  std::optional<egress::Policy> policy;
  bool read = false;
  for (const auto& s : specs) {
    for (const auto& hp : s.inject) {
      if (!read) {
        policy = sandbox_policy(ctx, id);
        read = true;
      }
      auto [host, port] = cred::split_inject_host(hp);
      const std::string rule = hp.find('[') == 0 ? hp : host + ":" + std::to_string(port);
      if (!policy)
        throw Error("sandbox " + id + " has no network, so " + s.name + " cannot be bound to " + hp,
                    0, "allow the host first: space net allow " + id + " " + rule);
      egress::Decision d = policy->precheck(host, port);
      if (!d.allow)
        throw Error("the network policy of sandbox " + id + " does not allow " + hp + ", where " +
                        s.name + " would be bound",
                    0, "allow it first: space net allow " + id + " " + rule);
    }
  }
}

}  // namespace

void grant_secrets(const store::Context& ctx, const std::string& id,
                   const std::vector<cred::GrantSpec>& specs) {
  bool binds = false;
  for (const auto& s : specs) binds = binds || !s.inject.empty();
  if (binds) check_hosts_allowed(ctx, id, specs);
  cred::grant_secrets(ctx, id, specs);
  if (binds) install_sandbox_ca(ctx, id);
}

void install_sandbox_ca(const store::Context& ctx, const std::string& id) {
  const std::string cred_dir = cred::cred_dir_for_root(ctx.root);
  if (!cred::has_sandbox_ca(cred_dir, id)) return;
  const std::string pem = fs::read_file(cred::sandbox_ca(cred_dir, id).cert, 1 << 16);
  try {
    fs::ScratchDir scratch("space-ca");
    const std::string& dir = scratch.path();
    // The guest's bundle as it is now (an image may have none).
    std::string bundle;
    try {
      CopyOptions out;
      out.sources = {id + ":" + kGuestCaBundle};
      out.dest = dir + "/bundle";
      out.follow_link = true;  // Debian's is a file; others may link it
      out.max_bytes = 16u << 20;
      copy_files(ctx, out);
      bundle = fs::read_file(dir + "/bundle", 16u << 20);
    } catch (const Error& e) {
      std::string what = e.what();
      for (char& c : what) c = char(std::tolower(static_cast<unsigned char>(c)));
      if (e.err() != ENOENT && what.find("no such file") == std::string::npos)
        throw;  // an image without a bundle gets one of its own: anything else is an error
    }
    if (bundle.find(pem) != std::string::npos) return;  // there already (a second grant)
    if (!bundle.empty() && bundle.back() != '\n') bundle += '\n';
    bundle += pem;
    fs::mkdir_p(dir + "/etc/ssl/certs");
    fs::mkdir_p(dir + "/etc/space");
    fs::write_file_atomic(dir + "/etc/ssl/certs/ca-certificates.crt", bundle, 0644);
    fs::write_file_atomic(dir + "/etc/space/ca.pem", pem, 0644);
    CopyOptions in;
    in.sources = {dir + "/etc"};
    in.dest = id + ":/";
    copy_files(ctx, in);
  } catch (Error& e) {
    e.add_context("install sandbox " + id + "'s CA in its trust store");
    throw;
  }
}

std::vector<std::string> ca_environment(const store::Context& ctx, const std::string& id) {
  try {
    if (!cred::has_sandbox_ca(cred::cred_dir_for_root(ctx.root), id)) return {};
  } catch (const std::exception&) {
    return {};
  }
  const std::string b = kGuestCaBundle;
  return {"SSL_CERT_FILE=" + b, "REQUESTS_CA_BUNDLE=" + b, "CURL_CA_BUNDLE=" + b,
          "GIT_SSL_CAINFO=" + b, std::string("NODE_EXTRA_CA_CERTS=") + kGuestCa};
}

}  // namespace space::core
