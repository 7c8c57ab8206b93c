// Unit tests for egress/intercept.h over socket pairs, with OpenSSL on both ends: a "host" (a TLS
// server whose certificate a CA of the test's signs) and a "guest" (a TLS client that trusts only
// the sandbox's CA). The broker's side verifies the host against [egress] ca_file, shows the
// guest a certificate for the host's name signed by the sandbox's CA, and swaps the bound
// placeholder in the request; a host the trust file does not vouch for is refused, as is a guest
// that does not trust the sandbox's CA.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "cred/openssl.h"
#include "cred/sandbox_ca.h"
#include "egress/intercept.h"
#include "support/socket_pair.h"
#include "support/temp_dir.h"
#include "util/fd.h"
#include "util/fs.h"

using namespace space;

namespace {

const char* kHost = "h.test";
const std::string kToken = "space-placeholder-0123456789abcdef";

using Pair = test::SocketPair;

ossl::Cert read_cert(const std::string& pem) {
  const ossl::Lib& o = ossl::lib();
  ossl::Bio b(o.BIO_new_mem_buf(pem.data(), int(pem.size())));
  return ossl::Cert(o.PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr));
}

ossl::Key read_key(const std::string& pem) {
  const ossl::Lib& o = ossl::lib();
  ossl::Bio b(o.BIO_new_mem_buf(pem.data(), int(pem.size())));
  return ossl::Key(o.PEM_read_bio_PrivateKey(b.get(), nullptr, nullptr, nullptr));
}

// The host's certificate for kHost and its key, signed by the CA in `ca`.
struct HostCert {
  ossl::Cert cert;
  ossl::Key key;
};
HostCert host_cert(const cred::SandboxCa& ca) {
  const ossl::Lib& o = ossl::lib();
  ossl::Cert issuer = read_cert(fs::read_file(ca.cert, 1 << 16));
  ossl::Key issuer_key = read_key(fs::read_file(ca.key, 1 << 16));
  REQUIRE(issuer);
  REQUIRE(issuer_key);
  HostCert h{ossl::Cert(o.X509_new()), ossl::Key(ossl::ec_p256_key())};
  REQUIRE(h.cert);
  REQUIRE(h.key);
  o.X509_set_version(h.cert.get(), 2);
  REQUIRE(ossl::set_random_serial(h.cert.get()));
  ossl::set_validity(h.cert.get(), 3600);
  o.X509_NAME_add_entry_by_txt(o.X509_get_subject_name(h.cert.get()), "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(kHost), -1, -1, 0);
  o.X509_set_issuer_name(h.cert.get(), o.X509_get_subject_name(issuer.get()));
  o.X509_set_pubkey(h.cert.get(), h.key.get());
  REQUIRE(ossl::add_extension(h.cert.get(), issuer.get(), NID_subject_alt_name,
                              (std::string("DNS:") + kHost).c_str()));
  REQUIRE(o.X509_sign(h.cert.get(), issuer_key.get(), o.EVP_sha256()) != 0);
  return h;
}

// A blocking TLS session over `fd`, handshaken; nullptr (with `why`) if the handshake failed.
ossl::Ssl tls(int fd, SSL_CTX* ctx, bool server, std::string& why) {
  const ossl::Lib& o = ossl::lib();
  ossl::Ssl s(o.SSL_new(ctx));
  REQUIRE(s);
  REQUIRE(o.SSL_set_fd(s.get(), fd) == 1);
  if (server) {
    o.SSL_set_accept_state(s.get());
  } else {
    o.SSL_set_connect_state(s.get());
    o.SSL_ctrl(s.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(kHost));
    o.SSL_set1_host(s.get(), kHost);
  }
  if (o.SSL_do_handshake(s.get()) != 1) {
    long v = o.SSL_get_verify_result(s.get());
    why = v != X509_V_OK ? o.X509_verify_cert_error_string(v) : ossl::take_error();
    return nullptr;
  }
  return s;
}

// Reads until `end` is seen (or the peer closes).
std::string read_until(SSL* s, const std::string& end) {
  std::string got;
  char buf[4096];
  while (got.find(end) == std::string::npos) {
    int n = ossl::lib().SSL_read(s, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, size_t(n));
  }
  return got;
}

void write_all(SSL* s, const std::string& data) {
  REQUIRE(ossl::lib().SSL_write(s, data.data(), int(data.size())) == int(data.size()));
}

struct Rig {
  Rig(const Rig&) = delete;
  test::TempDir d{"intercept"};
  cred::SandboxCa host_ca = cred::ensure_sandbox_ca(d.path + "/cred", "hostca");
  cred::SandboxCa sandbox_ca = cred::ensure_sandbox_ca(d.path + "/cred", "sandbox");
  cred::SandboxCa rogue_ca = cred::ensure_sandbox_ca(d.path + "/cred", "rogue");
  Pair guest, remote;  // a: the guest's (or host's) end; b: the broker's
  egress::InterceptOptions opts;
  std::vector<std::string> resolved, strays;
  std::string host_saw;
  Rig() {
    ::signal(SIGPIPE, SIG_IGN);  // as the broker does: a closed peer is an error, not a death
    opts.host = kHost;
    opts.ca_cert = sandbox_ca.cert;
    opts.ca_key = sandbox_ca.key;
    opts.trust_file = host_ca.cert;
    opts.handshake_ms = 5000;
    opts.idle_ms = 5000;
    opts.placeholders = {{kToken, "TOKEN", true}};
    opts.resolve = [this](const egress::Placeholder& p, const egress::RequestInfo& r) {
      resolved.push_back(p.name + " " + r.method + " " + r.target);
      return std::optional<SecretString>(SecretString("the-value"));
    };
    opts.stray = [this](const egress::Placeholder& p, const egress::RequestInfo&) {
      strays.push_back(p.name);
    };
  }
};

// The host's thread: a server whose certificate is set before its handshake.
void host_thread(Rig& r, const cred::SandboxCa& signer) {
  const ossl::Lib& o = ossl::lib();
  HostCert h = host_cert(signer);
  ossl::Ctx ctx(o.SSL_CTX_new(o.TLS_server_method()));
  ossl::Ssl s(o.SSL_new(ctx.get()));
  o.SSL_use_certificate(s.get(), h.cert.get());
  o.SSL_use_PrivateKey(s.get(), h.key.get());
  o.SSL_set_fd(s.get(), r.remote.a.get());
  o.SSL_set_accept_state(s.get());
  if (o.SSL_do_handshake(s.get()) != 1) {
    ossl::take_error();
    r.remote.a.reset();  // the broker sees the host go
    return;
  }
  r.host_saw = read_until(s.get(), "\r\n\r\n");
  if (r.host_saw.empty()) {  // the broker went (the guest's side failed)
    r.remote.a.reset();
    return;
  }
  const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  o.SSL_write(s.get(), reply.data(), int(reply.size()));
  o.SSL_shutdown(s.get());
  r.remote.a.reset();
}

// The broker's thread: the host's handshake, then the interception into `res`; both of its
// ends closed after.
std::thread broker_thread(Rig& r, egress::InterceptResult& res) {
  return std::thread([&r, &res] {
    std::string why;
    egress::SslPtr up = egress::upstream_handshake(r.remote.b.get(), r.opts, why);
    if (up) res = egress::intercept(r.guest.b.get(), r.remote.b.get(), std::move(up), r.opts);
    r.guest.b.reset();
    r.remote.b.reset();
  });
}

ossl::Ctx guest_ctx(const std::string& trust) {
  const ossl::Lib& o = ossl::lib();
  ossl::Ctx ctx(o.SSL_CTX_new(o.TLS_client_method()));
  REQUIRE(ctx);
  o.SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  REQUIRE(o.SSL_CTX_load_verify_locations(ctx.get(), trust.c_str(), nullptr) == 1);
  return ctx;
}

}  // namespace

TEST_CASE("intercept: the guest sees the sandbox CA's certificate, the host gets the value") {
  Rig r;
  std::thread host(host_thread, std::ref(r), std::cref(r.host_ca));
  egress::InterceptResult res;
  std::string up_why;
  std::thread broker([&] {
    egress::SslPtr up = egress::upstream_handshake(r.remote.b.get(), r.opts, up_why);
    if (!up) return;
    res = egress::intercept(r.guest.b.get(), r.remote.b.get(), std::move(up), r.opts);
    r.guest.b.reset();
  });

  ossl::Ctx ctx = guest_ctx(r.sandbox_ca.cert);
  std::string why;
  ossl::Ssl s = tls(r.guest.a.get(), ctx.get(), false, why);
  if (s) {
    write_all(s.get(),
              "GET /x HTTP/1.1\r\nHost: h.test\r\nAuthorization: Bearer " + kToken + "\r\n\r\n");
  }
  std::string answer = s ? read_until(s.get(), "ok") : "";
  s.reset();
  r.guest.a.reset();
  broker.join();
  host.join();

  CHECK(up_why == "");
  CHECK(why == "");
  CHECK(answer.find("200 OK") != std::string::npos);
  CHECK(r.host_saw.find("Authorization: Bearer the-value\r\n") != std::string::npos);
  CHECK(r.host_saw.find(kToken) == std::string::npos);
  CHECK(r.resolved == std::vector<std::string>{"TOKEN GET /x"});
  CHECK(res.requests == 1);
  CHECK(res.swaps == 1);
  CHECK_FALSE(res.refused);
}

TEST_CASE("intercept: a host the trust file does not vouch for is refused before the guest") {
  Rig r;
  std::thread host(host_thread, std::ref(r), std::cref(r.rogue_ca));
  std::string why;
  egress::SslPtr up = egress::upstream_handshake(r.remote.b.get(), r.opts, why);
  r.remote.b.reset();
  host.join();
  CHECK_FALSE(up);
  CHECK(why.find("certificate") != std::string::npos);
  CHECK(r.host_saw.empty());
}

TEST_CASE("intercept: a guest that does not trust the sandbox's CA gets nothing through") {
  Rig r;
  std::thread host(host_thread, std::ref(r), std::cref(r.host_ca));
  egress::InterceptResult res;
  std::thread broker = broker_thread(r, res);
  ossl::Ctx ctx = guest_ctx(r.rogue_ca.cert);  // trusts another CA only
  std::string why;
  ossl::Ssl s = tls(r.guest.a.get(), ctx.get(), false, why);
  CHECK_FALSE(s);
  CHECK(why != "");
  r.guest.a.reset();
  broker.join();
  host.join();
  CHECK(res.refused);
  CHECK(res.ended.find("the guest's TLS handshake failed") != std::string::npos);
  CHECK(r.resolved.empty());
  CHECK(r.host_saw.empty());
}

TEST_CASE("intercept: the guest's handshake has its own, longer deadline than the host's") {
  // A guest slower than the host's deadline still gets through (git on a PVM host took over
  // 10 s to its ClientHello); one that never starts its handshake is cut off at its own.
  for (bool silent : {false, true}) {
    CAPTURE(silent);
    Rig r;
    r.opts.handshake_ms = 200;
    r.opts.guest_handshake_ms = silent ? 300 : 5000;
    std::thread host(host_thread, std::ref(r), std::cref(r.host_ca));
    egress::InterceptResult res;
    std::thread broker = broker_thread(r, res);
    std::string answer;
    if (silent) {
      char c;
      CHECK(::read(r.guest.a.get(), &c, 1) == 0);  // closed on it, nothing sent
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
      ossl::Ctx ctx = guest_ctx(r.sandbox_ca.cert);
      std::string why;
      ossl::Ssl s = tls(r.guest.a.get(), ctx.get(), false, why);
      CHECK(why == "");
      if (s) {
        write_all(s.get(), "GET /slow HTTP/1.1\r\nHost: h.test\r\nAuthorization: Bearer " + kToken +
                               "\r\n\r\n");
        answer = read_until(s.get(), "ok");
      }
    }
    r.guest.a.reset();
    broker.join();
    host.join();
    if (silent) {
      CHECK(res.refused);
      CHECK(res.ended == "the guest's TLS handshake failed: timed out (or the broker stopped)");
    } else {
      CHECK(answer.find("200 OK") != std::string::npos);
      CHECK(res.swaps == 1);
      CHECK_FALSE(res.refused);
    }
  }
}
