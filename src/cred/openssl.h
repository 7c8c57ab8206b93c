// OpenSSL (libssl and libcrypto 3), loaded on first use with dlopen(): the sandboxes' CAs (here,
// in the credential helper) and the broker's TLS interception (egress/intercept.h). Linked in,
// its data made every `space` process, every VMM included, start about 1.4 ms later (134 -> 248
// minor faults at start, measured); only the two daemons pay for it this way. The table holds the
// functions space calls, listed once in SPACE_OPENSSL_FUNCTIONS; OpenSSL's macros over them
// (BIO_get_mem_data, SSL_CTX_set_mode, ...) are spelled out as the ctrl calls they stand for,
// since a macro would reach for the symbol, which nothing links. A missing library is an Error
// naming the package; RAII owners free through the table.
#pragma once
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>

#define SPACE_OPENSSL_FUNCTIONS(X)    \
  X(BIO_ctrl)                         \
  X(BIO_free_all)                     \
  X(BIO_new)                          \
  X(BIO_new_mem_buf)                  \
  X(BIO_s_mem)                        \
  X(BN_bin2bn)                        \
  X(BN_free)                          \
  X(BN_to_ASN1_INTEGER)               \
  X(ERR_clear_error)                  \
  X(ERR_error_string_n)               \
  X(ERR_get_error)                    \
  X(ERR_peek_error)                   \
  X(EVP_PKEY_Q_keygen)                \
  X(EVP_PKEY_free)                    \
  X(EVP_PKEY_up_ref)                  \
  X(EVP_sha256)                       \
  X(OPENSSL_cleanse)                  \
  X(PEM_read_bio_PrivateKey)          \
  X(PEM_read_bio_X509)                \
  X(PEM_write_bio_PrivateKey)         \
  X(PEM_write_bio_X509)               \
  X(RAND_bytes)                       \
  X(SSL_CTX_ctrl)                     \
  X(SSL_CTX_free)                     \
  X(SSL_CTX_load_verify_locations)    \
  X(SSL_CTX_new)                      \
  X(SSL_CTX_set_alpn_protos)          \
  X(SSL_CTX_set_alpn_select_cb)       \
  X(SSL_CTX_set_default_verify_paths) \
  X(SSL_CTX_set_options)              \
  X(SSL_CTX_set_verify)               \
  X(SSL_ctrl)                         \
  X(SSL_do_handshake)                 \
  X(SSL_free)                         \
  X(SSL_get0_param)                   \
  X(SSL_get_error)                    \
  X(SSL_get_verify_result)            \
  X(SSL_new)                          \
  X(SSL_pending)                      \
  X(SSL_read)                         \
  X(SSL_select_next_proto)            \
  X(SSL_set1_host)                    \
  X(SSL_set_accept_state)             \
  X(SSL_set_connect_state)            \
  X(SSL_set_fd)                       \
  X(SSL_shutdown)                     \
  X(SSL_use_PrivateKey)               \
  X(SSL_use_certificate)              \
  X(SSL_write)                        \
  X(TLS_client_method)                \
  X(TLS_server_method)                \
  X(X509V3_EXT_conf_nid)              \
  X(X509V3_set_ctx)                   \
  X(X509_EXTENSION_free)              \
  X(X509_NAME_add_entry_by_txt)       \
  X(X509_VERIFY_PARAM_set1_ip_asc)    \
  X(X509_add_ext)                     \
  X(X509_free)                        \
  X(X509_get_serialNumber)            \
  X(X509_get_subject_name)            \
  X(X509_getm_notAfter)               \
  X(X509_getm_notBefore)              \
  X(X509_gmtime_adj)                  \
  X(X509_new)                         \
  X(X509_set_issuer_name)             \
  X(X509_set_pubkey)                  \
  X(X509_set_version)                 \
  X(X509_sign)                        \
  X(X509_up_ref)                      \
  X(X509_verify_cert_error_string)

namespace space::ossl {

struct Lib {
#define SPACE_OPENSSL_SLOT(name) decltype(&::name) name;
  SPACE_OPENSSL_FUNCTIONS(SPACE_OPENSSL_SLOT)
#undef SPACE_OPENSSL_SLOT
};

// The loaded libraries; throws space::Error (naming libssl3) if they cannot be loaded.
const Lib& lib();

// OpenSSL's oldest queued error as text ("" if none); the queue is cleared.
std::string take_error();

template <class T, auto Free>
struct Freer {
  void operator()(T* p) const { (lib().*Free)(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Freer<EVP_PKEY, &Lib::EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Freer<X509, &Lib::X509_free>>;
using Bio = std::unique_ptr<BIO, Freer<BIO, &Lib::BIO_free_all>>;
using Ctx = std::unique_ptr<SSL_CTX, Freer<SSL_CTX, &Lib::SSL_CTX_free>>;
using Ssl = std::unique_ptr<SSL, Freer<SSL, &Lib::SSL_free>>;

// A new P-256 key (EVP_EC_gen), or nullptr.
EVP_PKEY* ec_p256_key();

// A 128-bit random serial number (positive) set on `cert`; false if OpenSSL failed.
bool set_random_serial(X509* cert);

// Valid from an hour ago (a guest clock a little behind) for `seconds` from now.
void set_validity(X509* cert, long seconds);

// Extension `nid` = `value` (OpenSSL's config syntax) added to `cert`, issued by `issuer`;
// false if OpenSSL refused it.
bool add_extension(X509* cert, X509* issuer, int nid, const char* value);

// What a memory BIO holds (BIO_get_mem_data).
std::string mem_contents(BIO* b);

}  // namespace space::ossl
