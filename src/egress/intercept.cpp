// TLS interception of one connection; see intercept.h.
#include "egress/intercept.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <mutex>

#include "egress/policy.h"
#include "egress/wait.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/timing.h"

namespace space::egress {

namespace {

constexpr size_t kChunk = 16 * 1024;
constexpr size_t kMaxPending = 256 * 1024;  // per direction, before reading that side stops
constexpr long kLeafSeconds = 7L * 24 * 3600;
constexpr size_t kMaxLeaves = 1024;  // minted certificates kept in memory

std::string ssl_error() {
  std::string e = ossl::take_error();
  return e.empty() ? "unknown TLS error" : e;
}

using ossl::Bio;
using ossl::Cert;
using ossl::Ctx;
using ossl::Key;

// ALPN: http/1.1 only, the one protocol the rewriter speaks.
const unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void*) {
  unsigned char* chosen = nullptr;
  if (ossl::lib().SSL_select_next_proto(&chosen, outlen, kAlpn, sizeof kAlpn, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_ALERT_FATAL;  // it offers only protocols we cannot read (h2)
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

// TLS 1.2 at least; a peer that closes without close_notify has ended, not failed (OpenSSL 3
// says otherwise); partial writes, from a buffer that may move between retries.
void common_settings(SSL_CTX* ctx) {
  const ossl::Lib& o = ossl::lib();
  o.SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
  o.SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  o.SSL_CTX_ctrl(ctx, SSL_CTRL_MODE,
                 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, nullptr);
}

// The contexts, made once per broker (loading the system's trust store costs milliseconds).
struct Contexts {
  std::mutex mu;
  Ctx server;
  std::map<std::string, Ctx> clients;                      // by trust file
  Key leaf_key;                                            // one key for every minted certificate
  std::map<std::string, std::pair<Cert, int64_t>> leaves;  // CA cert + host -> leaf, minted at

  SSL_CTX* server_ctx() {
    if (!server) {
      const ossl::Lib& o = ossl::lib();
      server.reset(o.SSL_CTX_new(o.TLS_server_method()));
      if (!server) throw Error("TLS: " + ssl_error());
      common_settings(server.get());
      o.SSL_CTX_set_alpn_select_cb(server.get(), select_alpn, nullptr);
    }
    return server.get();
  }
  SSL_CTX* client_ctx(const std::string& trust_file) {
    Ctx& c = clients[trust_file];
    if (!c) {
      const ossl::Lib& o = ossl::lib();
      c.reset(o.SSL_CTX_new(o.TLS_client_method()));
      if (!c) throw Error("TLS: " + ssl_error());
      common_settings(c.get());
      o.SSL_CTX_set_verify(c.get(), SSL_VERIFY_PEER, nullptr);
      if (o.SSL_CTX_set_default_verify_paths(c.get()) != 1)
        throw Error("TLS: the system's trust store: " + ssl_error());
      if (!trust_file.empty() &&
          o.SSL_CTX_load_verify_locations(c.get(), trust_file.c_str(), nullptr) != 1)
        throw Error("TLS: [egress] ca_file " + trust_file + ": " + ssl_error(), 0,
                    "point ca_file in config.toml at a PEM file of CA certificates");
      o.SSL_CTX_set_alpn_protos(c.get(), kAlpn, sizeof kAlpn);
    }
    return c.get();
  }

  // A certificate for `host` signed by the CA in PEM `ca_cert_pem` / `ca_key_pem`.
  X509* leaf(const std::string& ca_cert_pem, const std::string& ca_key_pem,
             const std::string& host) {
    const std::string id = ca_cert_pem + "|" + host;
    const int64_t now = timing::wall_ms() / 1000;
    auto it = leaves.find(id);
    if (it != leaves.end() && now - it->second.second < 24 * 3600) return it->second.first.get();
    const ossl::Lib& o = ossl::lib();
    if (!leaf_key) {
      leaf_key.reset(ossl::ec_p256_key());
      if (!leaf_key) throw Error("TLS: a key: " + ssl_error());
    }
    Bio cb(o.BIO_new_mem_buf(ca_cert_pem.data(), int(ca_cert_pem.size())));
    Cert ca(o.PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr));
    Bio kb(o.BIO_new_mem_buf(ca_key_pem.data(), int(ca_key_pem.size())));
    Key ca_key(o.PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr));
    if (!ca || !ca_key) throw Error("TLS: the sandbox's CA cannot be read: " + ssl_error());
    Cert c(o.X509_new());
    if (!c) throw Error("TLS: a certificate for " + host + ": " + ssl_error());
    o.X509_set_version(c.get(), 2);
    if (!ossl::set_random_serial(c.get()))
      throw Error("TLS: a serial number for " + host + ": " + ssl_error());
    ossl::set_validity(c.get(), kLeafSeconds);
    X509_NAME* name = o.X509_get_subject_name(c.get());
    o.X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>(host.c_str()), -1, -1, 0);
    o.X509_set_issuer_name(c.get(), o.X509_get_subject_name(ca.get()));
    o.X509_set_pubkey(c.get(), leaf_key.get());
    const std::string san = (IpAddress::parse(host) ? "IP:" : "DNS:") + host;
    for (auto [nid, value] : {std::pair<int, std::string>{NID_subject_alt_name, san},
                              {NID_basic_constraints, "critical,CA:FALSE"},
                              {NID_key_usage, "critical,digitalSignature"},
                              {NID_ext_key_usage, "serverAuth"}})
      if (!ossl::add_extension(c.get(), ca.get(), nid, value.c_str()))
        throw Error("TLS: a certificate for " + host + ": " + ssl_error());
    if (o.X509_sign(c.get(), ca_key.get(), o.EVP_sha256()) == 0)
      throw Error("TLS: sign a certificate for " + host + ": " + ssl_error());
    // Bounded: a broker serves sandboxes for days, and a destroyed one's entries are never asked
    // for again. Starting over costs each host one signature.
    if (leaves.size() >= kMaxLeaves) leaves.clear();
    auto& slot = leaves[id];
    slot = {std::move(c), now};
    return slot.first.get();
  }
};

Contexts& contexts() {
  static Contexts* c = new Contexts();  // never destroyed: threads may still use it at exit
  return *c;
}

enum class Step { Done, Again, Failed };

// Runs a handshake on non-blocking `fd` to its end; "" on success, else why not.
std::string handshake(SSL* s, int fd, int ms, int stop_fd) {
  const ossl::Lib& o = ossl::lib();
  const int64_t deadline = timing::mono_ms() + ms;
  for (;;) {
    o.ERR_clear_error();
    int rc = o.SSL_do_handshake(s);
    if (rc == 1) return "";
    int err = o.SSL_get_error(s, rc);
    short events = err == SSL_ERROR_WANT_READ ? POLLIN : err == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    if (!events) {
      long v = o.SSL_get_verify_result(s);
      if (v != X509_V_OK) return std::string("certificate: ") + o.X509_verify_cert_error_string(v);
      std::string e = ssl_error();
      return err == SSL_ERROR_SYSCALL && e == "unknown TLS error" ? "the peer closed the connection"
                                                                  : e;
    }
    if (wait_for(fd, events, deadline, stop_fd) != Wait::Ready)
      return "timed out (or the broker stopped)";
  }
}

// One side of the relay: its session, what it last asked to wait for, whether it is done.
struct Side {
  SSL* ssl;
  int fd;
  bool eof = false;   // it sent close_notify or closed
  bool shut = false;  // we sent it close_notify
  bool failed = false;
  bool read_wants_write = false, write_wants_read = false;
  uint64_t bytes = 0;
};

// SSL_read into `out` (appending with `append`); Again when nothing is there now.
template <class Append>
Step read_side(Side& s, Append&& append) {
  const ossl::Lib& o = ossl::lib();
  char buf[kChunk];
  o.ERR_clear_error();
  int n = o.SSL_read(s.ssl, buf, sizeof buf);
  if (n > 0) {
    s.read_wants_write = false;
    s.bytes += uint64_t(n);
    append(std::string_view(buf, size_t(n)));
    o.OPENSSL_cleanse(buf, size_t(n));
    return Step::Done;
  }
  int err = o.SSL_get_error(s.ssl, n);
  if (err == SSL_ERROR_WANT_READ) return Step::Again;
  if (err == SSL_ERROR_WANT_WRITE) {
    s.read_wants_write = true;
    return Step::Again;
  }
  if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && o.ERR_peek_error() == 0)) {
    s.eof = true;  // close_notify, or a plain close
    return Step::Done;
  }
  s.failed = true;
  o.ERR_clear_error();
  return Step::Failed;
}

// SSL_write of `data`'s front; returns how much went.
size_t write_side(Side& s, std::string_view data, Step& step) {
  const ossl::Lib& o = ossl::lib();
  o.ERR_clear_error();
  int n = o.SSL_write(s.ssl, data.data(), int(std::min(data.size(), size_t(1) << 30)));
  if (n > 0) {
    s.write_wants_read = false;
    step = Step::Done;
    return size_t(n);
  }
  int err = o.SSL_get_error(s.ssl, n);
  if (err == SSL_ERROR_WANT_WRITE) {
    step = Step::Again;
  } else if (err == SSL_ERROR_WANT_READ) {
    s.write_wants_read = true;
    step = Step::Again;
  } else {
    s.failed = true;
    step = Step::Failed;
    o.ERR_clear_error();
  }
  return 0;
}

}  // namespace

SslPtr upstream_handshake(int remote, const InterceptOptions& o, std::string& why) {
  try {
    set_nonblocking(remote);
    int one = 1;  // a request is one TLS record: send it now, not after the host's ACK
    ::setsockopt(remote, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    SSL_CTX* ctx;
    {
      std::lock_guard<std::mutex> lock(contexts().mu);
      ctx = contexts().client_ctx(o.trust_file);
    }
    const ossl::Lib& l = ossl::lib();
    SslPtr s(l.SSL_new(ctx));
    if (!s || l.SSL_set_fd(s.get(), remote) != 1) throw Error("TLS: " + ssl_error());
    l.SSL_set_connect_state(s.get());
    X509_VERIFY_PARAM* param = l.SSL_get0_param(s.get());
    if (IpAddress::parse(o.host)) {
      l.X509_VERIFY_PARAM_set1_ip_asc(param, o.host.c_str());
    } else {  // SNI (SSL_set_tlsext_host_name), and the name to verify
      l.SSL_ctrl(s.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 const_cast<char*>(o.host.c_str()));
      l.SSL_set1_host(s.get(), o.host.c_str());
    }
    why = handshake(s.get(), remote, o.handshake_ms, o.stop_fd);
    if (!why.empty()) return nullptr;
    return s;
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
}

namespace {

// The guest's side: TLS as `o.host`, with a leaf certificate the sandbox's CA signs. Throws.
SslPtr guest_side(int guest, const InterceptOptions& o) {
  const ossl::Lib& l = ossl::lib();
  set_nonblocking(guest);
  const std::string ca_cert = fs::read_file(o.ca_cert, 1 << 16);
  std::string ca_key = fs::read_file(o.ca_key, 1 << 16);
  X509* leaf;
  SSL_CTX* ctx;
  EVP_PKEY* key;
  {
    std::lock_guard<std::mutex> lock(contexts().mu);
    leaf = contexts().leaf(ca_cert, ca_key, o.host);
    l.X509_up_ref(leaf);  // ours to use after the lock; the cache may replace its entry
    key = contexts().leaf_key.get();
    l.EVP_PKEY_up_ref(key);
    ctx = contexts().server_ctx();
  }
  l.OPENSSL_cleanse(ca_key.data(), ca_key.size());
  Cert leaf_ref(leaf);
  Key key_ref(key);
  SslPtr down(l.SSL_new(ctx));
  if (!down || l.SSL_set_fd(down.get(), guest) != 1 ||
      l.SSL_use_certificate(down.get(), leaf) != 1 || l.SSL_use_PrivateKey(down.get(), key) != 1)
    throw Error("TLS: " + ssl_error());
  l.SSL_set_accept_state(down.get());
  return down;
}

// Both ways of one intercepted connection: the guest's requests, rewritten, toward the host, and
// the host's answers back, each bounded by kMaxPending.
struct Pump {
  Side g, r;
  RequestRewriter& rw;
  SecretBytes to_remote;  // rewritten requests: values in them
  std::string to_guest;
  size_t to_remote_off = 0;

  bool requests_sent() const { return to_remote_off == to_remote.size(); }

  // Reads the guest's requests and writes them on; true if anything moved.
  bool move_requests() {
    bool progress = false;
    Step st;
    while (!g.eof && !g.failed && to_remote.size() - to_remote_off < kMaxPending) {
      st = read_side(g, [&](std::string_view b) { rw.feed(b, to_remote); });
      if (st != Step::Done) break;
      progress = true;
    }
    while (to_remote_off < to_remote.size() && !r.failed) {
      size_t n = write_side(r, std::string_view(to_remote).substr(to_remote_off), st);
      if (st != Step::Done) break;
      to_remote_off += n;
      progress = true;
    }
    if (requests_sent() && to_remote_off > 0) {
      wipe(to_remote);
      to_remote_off = 0;
    }
    return progress;
  }

  // Reads the host's answers and writes them to the guest; true if anything moved.
  bool move_answers() {
    bool progress = false;
    Step st;
    while (!r.eof && !r.failed && to_guest.size() < kMaxPending) {
      st = read_side(r, [&](std::string_view b) { to_guest.append(b); });
      if (st != Step::Done) break;
      progress = true;
    }
    while (!to_guest.empty() && !g.failed) {
      size_t n = write_side(g, to_guest, st);
      if (st != Step::Done) break;
      to_guest.erase(0, n);
      progress = true;
    }
    return progress;
  }

  // A side that ended, once what it sent has gone on, ends its way on the other side.
  void pass_ends() {
    const ossl::Lib& l = ossl::lib();
    if (g.eof && requests_sent() && !r.shut && !r.failed) {
      l.SSL_shutdown(r.ssl);
      ::shutdown(r.fd, SHUT_WR);
      r.shut = true;
    }
    if (r.eof && to_guest.empty() && !g.shut && !g.failed) {
      l.SSL_shutdown(g.ssl);
      ::shutdown(g.fd, SHUT_WR);
      g.shut = true;
    }
  }

  // Why the connection ended, or "" while it goes on.
  std::string ended() const {
    if (g.failed || r.failed) return g.failed ? "the guest's TLS failed" : "the host's TLS failed";
    if (g.eof && r.eof && to_guest.empty() && requests_sent()) return "closed";
    return "";
  }

  // Waits for either side (as each one's wants say) until `idle_until`; why it ended, or "".
  std::string wait(const InterceptOptions& o, int64_t idle_until) const {
    short ge = 0, re = 0;
    if ((!g.eof && to_remote.size() - to_remote_off < kMaxPending) || g.write_wants_read)
      ge |= POLLIN;
    if (!to_guest.empty() || g.read_wants_write) ge |= POLLOUT;
    if ((!r.eof && to_guest.size() < kMaxPending) || r.write_wants_read) re |= POLLIN;
    if (to_remote_off < to_remote.size() || r.read_wants_write) re |= POLLOUT;
    pollfd p[3] = {{g.fd, ge, 0}, {r.fd, re, 0}, {o.stop_fd, POLLIN, 0}};
    int left = int(std::max<int64_t>(idle_until - timing::mono_ms(), 0));
    int n = ::poll(p, o.stop_fd >= 0 ? 3 : 2, left);
    if (n < 0 && errno == EINTR) return "";
    if (n == 0) return "idle for " + std::to_string(o.idle_ms / 1000) + " s";
    if (o.stop_fd >= 0 && p[2].revents) return "the broker is stopping";
    return "";  // errors and hang-ups show on the next read or write
  }
};

}  // namespace

InterceptResult intercept(int guest, int remote, SslPtr upstream, const InterceptOptions& o) {
  InterceptResult res;
  SslPtr down;
  try {
    down = guest_side(guest, o);
  } catch (const std::exception& e) {
    res.ended = std::string("interception failed: ") + e.what();
    res.refused = true;
    return res;
  }
  std::string why = handshake(down.get(), guest, o.guest_handshake_ms, o.stop_fd);
  if (!why.empty()) {
    res.ended = "the guest's TLS handshake failed: " + why;
    res.refused = true;
    return res;
  }

  RequestRewriter rw(o.placeholders, o.resolve, o.stray);
  Pump pump{{down.get(), guest}, {upstream.get(), remote}, rw};
  const ossl::Lib& l = ossl::lib();
  int64_t last = timing::mono_ms();
  try {
    for (;;) {
      const bool requests = pump.move_requests();
      const bool answers = pump.move_answers();
      pump.pass_ends();
      res.ended = pump.ended();
      if (!res.ended.empty()) break;
      if (requests || answers) {
        last = timing::mono_ms();
        continue;
      }
      if (l.SSL_pending(pump.g.ssl) > 0 || l.SSL_pending(pump.r.ssl) > 0) continue;
      res.ended = pump.wait(o, last + o.idle_ms);
      if (!res.ended.empty()) break;
    }
  } catch (const RewriteError& e) {
    res.ended = e.what();
    res.refused = true;
  } catch (const std::exception& e) {
    res.ended = std::string("interception failed: ") + e.what();
    res.refused = true;
  }
  wipe(pump.to_remote);
  res.bytes_out = pump.g.bytes;
  res.bytes_in = pump.r.bytes;
  res.requests = rw.requests();
  res.swaps = rw.swaps();
  return res;
}

}  // namespace space::egress
