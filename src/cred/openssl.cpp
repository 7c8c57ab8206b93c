// dlopen() of OpenSSL; see openssl.h.
#include "cred/openssl.h"

#include "util/dynlib.h"
#include "util/error.h"

namespace space::ossl {
namespace {

constexpr const char* kHint = "install Debian's libssl3 (apt-get install libssl3)";

Lib load() {
  void* crypto = dynlib::open("libcrypto.so.3", kHint);
  void* ssl = dynlib::open("libssl.so.3", kHint);
  Lib l{};
#define SPACE_OPENSSL_BIND(name) \
  dynlib::bind(l.name, {ssl, crypto}, #name, "libssl.so.3 and libcrypto.so.3", kHint);
  SPACE_OPENSSL_FUNCTIONS(SPACE_OPENSSL_BIND)
#undef SPACE_OPENSSL_BIND
  return l;  // the libraries stay loaded for the life of the process
}

}  // namespace

const Lib& lib() {
  static const Lib table = load();  // once, on first use (a failed load is tried again)
  return table;
}

std::string take_error() {
  const Lib& o = lib();
  unsigned long e = o.ERR_get_error();
  char buf[256] = "";
  if (e) o.ERR_error_string_n(e, buf, sizeof buf);
  o.ERR_clear_error();
  return buf;
}

EVP_PKEY* ec_p256_key() {
  return lib().EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", const_cast<char*>("P-256"));
}

bool set_random_serial(X509* cert) {
  const Lib& o = lib();
  unsigned char serial[16];
  if (o.RAND_bytes(serial, sizeof serial) != 1) return false;
  serial[0] &= 0x7f;
  BIGNUM* bn = o.BN_bin2bn(serial, sizeof serial, nullptr);
  bool ok = bn && o.BN_to_ASN1_INTEGER(bn, o.X509_get_serialNumber(cert));
  o.BN_free(bn);
  return ok;
}

void set_validity(X509* cert, long seconds) {
  const Lib& o = lib();
  o.X509_gmtime_adj(o.X509_getm_notBefore(cert), -3600);
  o.X509_gmtime_adj(o.X509_getm_notAfter(cert), seconds);
}

bool add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  const Lib& o = lib();
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  o.X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = o.X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) return false;
  int ok = o.X509_add_ext(cert, ext, -1);
  o.X509_EXTENSION_free(ext);
  return ok == 1;
}

std::string mem_contents(BIO* b) {
  char* data = nullptr;
  long n = lib().BIO_ctrl(b, BIO_CTRL_INFO, 0, &data);  // BIO_get_mem_data
  return n > 0 && data ? std::string(data, size_t(n)) : std::string();
}

}  // namespace space::ossl
