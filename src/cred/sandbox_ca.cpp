// A sandbox's certificate authority; see sandbox_ca.h.
#include "cred/sandbox_ca.h"

#include <sys/stat.h>

#include <functional>

#include "cred/openssl.h"
#include "store/paths.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::cred {

namespace {

constexpr long kValidSeconds = 10L * 365 * 24 * 3600;

[[noreturn]] void ssl_fail(const std::string& what) {
  std::string why = ossl::take_error();
  throw Error("sandbox CA: " + what + ": " + (why.empty() ? "unknown error" : why));
}

std::string pem_of(const std::function<int(BIO*)>& write) {
  const ossl::Lib& o = ossl::lib();
  ossl::Bio b(o.BIO_new(o.BIO_s_mem()));
  if (!b || write(b.get()) != 1) ssl_fail("write PEM");
  return ossl::mem_contents(b.get());
}

}  // namespace

SandboxCa sandbox_ca(const std::string& cred_dir, const std::string& sandbox) {
  SandboxCa ca;
  ca.dir = store::sandbox_entry(cred_dir + "/ca", sandbox);
  ca.cert = ca.dir + "/ca.pem";
  ca.key = ca.dir + "/ca.key";
  return ca;
}

bool has_sandbox_ca(const std::string& cred_dir, const std::string& sandbox) {
  SandboxCa ca = sandbox_ca(cred_dir, sandbox);
  return fs::exists(ca.cert) && fs::exists(ca.key);
}

SandboxCa ensure_sandbox_ca(const std::string& cred_dir, const std::string& sandbox) {
  SandboxCa ca = sandbox_ca(cred_dir, sandbox);
  if (fs::exists(ca.cert) && fs::exists(ca.key)) return ca;
  const ossl::Lib& o = ossl::lib();
  ossl::Key key(ossl::ec_p256_key());
  if (!key) ssl_fail("generate its key");
  ossl::Cert cert(o.X509_new());
  if (!cert) ssl_fail("new certificate");
  o.X509_set_version(cert.get(), 2);
  if (!ossl::set_random_serial(cert.get())) ssl_fail("serial");
  ossl::set_validity(cert.get(), kValidSeconds);
  X509_NAME* name = o.X509_get_subject_name(cert.get());
  const std::string cn = "space sandbox " + sandbox;
  o.X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("space"), -1, -1, 0);
  o.X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  o.X509_set_issuer_name(cert.get(), name);
  o.X509_set_pubkey(cert.get(), key.get());
  for (auto [nid, value] :
       {std::pair<int, const char*>{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
        {NID_key_usage, "critical,keyCertSign,cRLSign"},
        {NID_subject_key_identifier, "hash"}})
    if (!ossl::add_extension(cert.get(), cert.get(), nid, value)) ssl_fail("extension");
  if (o.X509_sign(cert.get(), key.get(), o.EVP_sha256()) == 0) ssl_fail("sign");
  std::string key_pem = pem_of([&](BIO* b) {
    return o.PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  std::string cert_pem = pem_of([&](BIO* b) { return o.PEM_write_bio_X509(b, cert.get()); });
  fs::mkdir_p(ca.dir);
  ::chmod(ca.dir.c_str(), 0700);
  fs::write_file_atomic(ca.key, key_pem, 0600);
  fs::write_file_atomic(ca.cert, cert_pem, 0644);
  o.OPENSSL_cleanse(key_pem.data(), key_pem.size());
  return ca;
}

void remove_sandbox_ca(const std::string& cred_dir, const std::string& sandbox) noexcept {
  try {
    SandboxCa ca = sandbox_ca(cred_dir, sandbox);
    if (fs::exists(ca.dir)) fs::remove_tree(ca.dir);
  } catch (const std::exception& e) {
    log::warn(std::string("sandbox CA of ") + sandbox + ": " + e.what());
  }
}

}  // namespace space::cred
