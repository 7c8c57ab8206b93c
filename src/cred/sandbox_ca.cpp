// A sandbox's certificate authority; see sandbox_ca.h.
#include "cred/sandbox_ca.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <functional>
#include <memory>

#include "store/paths.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::cred {

namespace {

constexpr long kValidSeconds = 10L * 365 * 24 * 3600;

[[noreturn]] void ssl_fail(const std::string& what) {
  unsigned long e = ERR_get_error();
  char buf[256] = "unknown error";
  if (e) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  throw Error("sandbox CA: " + what + ": " + buf);
}

template <class T, void (*F)(T*)>
struct Free {
  void operator()(T* p) const { F(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Free<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Free<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Free<BIO, BIO_free_all>>;

std::string pem_of(const std::function<int(BIO*)>& write) {
  Bio b(BIO_new(BIO_s_mem()));
  if (!b || write(b.get()) != 1) ssl_fail("write PEM");
  char* data = nullptr;
  long n = BIO_get_mem_data(b.get(), &data);
  return std::string(data, size_t(n));
}

void add_ext(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) ssl_fail("extension");
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) ssl_fail("add extension");
}

}  // namespace

SandboxCa sandbox_ca(const std::string& cred_dir, const std::string& sandbox) {
  store::validate_id(sandbox);
  SandboxCa ca;
  ca.dir = cred_dir + "/ca/" + sandbox;
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
  Key key(EVP_EC_gen("P-256"));
  if (!key) ssl_fail("generate its key");
  Cert cert(X509_new());
  if (!cert) ssl_fail("new certificate");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) ssl_fail("serial");
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()))) ssl_fail("serial");
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // a guest clock a little behind
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), kValidSeconds);
  X509_NAME* name = X509_get_subject_name(cert.get());
  const std::string cn = "space sandbox " + sandbox;
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("space"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  X509_set_pubkey(cert.get(), key.get());
  add_ext(cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
  add_ext(cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  add_ext(cert.get(), NID_subject_key_identifier, "hash");
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) ssl_fail("sign");
  std::string key_pem = pem_of([&](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  std::string cert_pem = pem_of([&](BIO* b) { return PEM_write_bio_X509(b, cert.get()); });
  fs::mkdir_p(ca.dir);
  ::chmod(ca.dir.c_str(), 0700);
  fs::write_file_atomic(ca.key, key_pem, 0600);
  fs::write_file_atomic(ca.cert, cert_pem, 0644);
  OPENSSL_cleanse(key_pem.data(), key_pem.size());
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
