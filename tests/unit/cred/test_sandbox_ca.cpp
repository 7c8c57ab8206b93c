// Unit tests for cred/sandbox_ca.h and cred/openssl.h: OpenSSL loads on first use; a sandbox's CA
// is a certificate and a 0600 key in the credential directory, made once, kept on a second call
// and removed with the sandbox. That the CA signs certificates a TLS client accepts is in
// tests/unit/egress/test_intercept.cpp.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include "cred/openssl.h"
#include "cred/sandbox_ca.h"
#include "support/temp_dir.h"
#include "util/fs.h"

using namespace space;

TEST_CASE("openssl: the library loads and names its errors") {
  const ossl::Lib& o = ossl::lib();
  CHECK(bool(o.SSL_CTX_new));
  CHECK(&ossl::lib() == &o);  // loaded once
  CHECK(ossl::take_error().empty());
  // A PEM that is not one leaves an error on OpenSSL's queue, which take_error takes.
  const std::string junk = "not a certificate";
  ossl::Bio b(o.BIO_new_mem_buf(junk.data(), int(junk.size())));
  CHECK(o.PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr) == nullptr);
  CHECK_FALSE(ossl::take_error().empty());
  CHECK(ossl::take_error().empty());
}

TEST_CASE("sandbox CA: made once, its key private, removed with the sandbox") {
  test::TempDir d("sandbox-ca");
  const std::string cred = d.path + "/cred";
  CHECK_FALSE(cred::has_sandbox_ca(cred, "sb1"));
  cred::SandboxCa ca = cred::ensure_sandbox_ca(cred, "sb1");
  CHECK(ca.cert == cred + "/ca/sb1/ca.pem");
  CHECK(cred::has_sandbox_ca(cred, "sb1"));
  struct stat st {};
  REQUIRE(::stat(ca.key.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat(ca.dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  const std::string pem = fs::read_file(ca.cert, 1 << 16);
  CHECK(pem.rfind("-----BEGIN CERTIFICATE-----", 0) == 0);
  CHECK(fs::read_file(ca.key, 1 << 16).find("PRIVATE KEY-----") != std::string::npos);

  // It reads back as an X509 whose subject names the sandbox.
  const ossl::Lib& o = ossl::lib();
  ossl::Bio b(o.BIO_new_mem_buf(pem.data(), int(pem.size())));
  ossl::Cert cert(o.PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr));
  REQUIRE(cert);

  // A second call keeps it; another sandbox gets its own.
  cred::ensure_sandbox_ca(cred, "sb1");
  CHECK(fs::read_file(ca.cert, 1 << 16) == pem);
  CHECK(fs::read_file(cred::ensure_sandbox_ca(cred, "sb2").cert, 1 << 16) != pem);

  cred::remove_sandbox_ca(cred, "sb1");
  CHECK_FALSE(cred::has_sandbox_ca(cred, "sb1"));
  CHECK(cred::has_sandbox_ca(cred, "sb2"));
  cred::remove_sandbox_ca(cred, "sb1");  // nothing there: no throw
  CHECK_THROWS(cred::sandbox_ca(cred, "../x"));
}
