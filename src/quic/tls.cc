#include "quic/tls.h"

#include <arpa/inet.h>
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <ctime>

namespace kvcs::quic {
namespace {

// TLS 1.3 only, no middlebox-compatibility mode (RFC 9001 §8.4 forbids it for QUIC). AES-128-GCM
// first: every byte of a KV cache is sealed once per QUIC hop and opened once, and GnuTLS's
// AES-128-GCM is ~18% faster than the AES-256-GCM that NORMAL puts first (10 AES rounds, not 14;
// docs/protocols/quic-transport.md). TLS_AES_128_GCM_SHA256 is TLS 1.3's mandatory suite; the
// other two QUIC peers use stay offered after it.
constexpr char kPriority[] =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"
    "%DISABLE_TLS13_COMPAT_MODE";

Status TlsError(const std::string& what, int rv) {
  return {Code::kInvalidArgument, what + ": " + gnutls_strerror(rv)};
}

std::vector<gnutls_datum_t> AlpnDatums(const std::vector<std::string>& alpns) {
  std::vector<gnutls_datum_t> out;
  for (const auto& a : alpns) {
    out.push_back({reinterpret_cast<unsigned char*>(const_cast<char*>(a.data())),
                   static_cast<unsigned>(a.size())});
  }
  return out;
}

std::string JoinAlpns(const std::vector<std::string>& alpns) {
  std::string s;
  for (const auto& a : alpns) {
    if (!s.empty()) s += ", ";
    s += a;
  }
  return s;
}

Status CheckAlpns(const std::vector<std::string>& alpns) {
  if (alpns.empty()) return InvalidArgument("at least one ALPN protocol is required");
  for (const auto& a : alpns) {
    if (a.empty() || a.size() > 255) return InvalidArgument("ALPN protocol must be 1..255 bytes");
  }
  return Status::Ok();
}

// Server hook after ClientHello processing: refuse the handshake unless ALPN selected one of
// ours (GnuTLS then sends the no_application_protocol alert).
int ServerClientHelloHook(gnutls_session_t session, unsigned int, unsigned, unsigned int,
                          const gnutls_datum_t*) {
  gnutls_datum_t alpn;
  if (gnutls_alpn_get_selected_protocol(session, &alpn) != 0) {
    return GNUTLS_E_NO_APPLICATION_PROTOCOL;
  }
  return 0;
}

}  // namespace

std::string TlsAlertName(uint8_t alert) {
  const char* n = gnutls_alert_get_strname(static_cast<gnutls_alert_description_t>(alert));
  return n ? std::string(n) : "alert " + std::to_string(alert);
}

TlsServerContext::~TlsServerContext() {
  if (creds_) gnutls_certificate_free_credentials(creds_);
}

Result<std::unique_ptr<TlsServerContext>> TlsServerContext::Create(const std::string& cert_file,
                                                                   const std::string& key_file,
                                                                   std::vector<std::string> alpns) {
  KVCS_RETURN_IF_ERROR(CheckAlpns(alpns));
  std::unique_ptr<TlsServerContext> ctx(new TlsServerContext());
  ctx->alpns_ = std::move(alpns);
  if (int rv = gnutls_certificate_allocate_credentials(&ctx->creds_); rv != 0) {
    return TlsError("gnutls_certificate_allocate_credentials", rv);
  }
  if (int rv = gnutls_certificate_set_x509_key_file(ctx->creds_, cert_file.c_str(),
                                                    key_file.c_str(), GNUTLS_X509_FMT_PEM);
      rv != 0) {
    return TlsError("cannot load certificate '" + cert_file + "' / key '" + key_file + "'", rv);
  }
  return ctx;
}

TlsClientContext::~TlsClientContext() {
  if (creds_) gnutls_certificate_free_credentials(creds_);
}

Result<std::unique_ptr<TlsClientContext>> TlsClientContext::Create(const std::string& ca_file,
                                                                   bool insecure,
                                                                   std::vector<std::string> alpns) {
  KVCS_RETURN_IF_ERROR(CheckAlpns(alpns));
  std::unique_ptr<TlsClientContext> ctx(new TlsClientContext());
  ctx->alpns_ = std::move(alpns);
  ctx->insecure_ = insecure;
  if (int rv = gnutls_certificate_allocate_credentials(&ctx->creds_); rv != 0) {
    return TlsError("gnutls_certificate_allocate_credentials", rv);
  }
  if (!insecure) {
    int rv = ca_file.empty() ? gnutls_certificate_set_x509_system_trust(ctx->creds_)
                             : gnutls_certificate_set_x509_trust_file(ctx->creds_, ca_file.c_str(),
                                                                      GNUTLS_X509_FMT_PEM);
    if (rv <= 0) {
      return InvalidArgument(ca_file.empty()
                                 ? "no certificates in the system trust store"
                                 : "no CA certificates loaded from '" + ca_file + "'" +
                                       (rv < 0 ? std::string(": ") + gnutls_strerror(rv) : ""));
    }
  }
  return ctx;
}

TlsSession::~TlsSession() {
  if (session_) gnutls_deinit(session_);
}

Status TlsSession::InitServer(const TlsServerContext& ctx, ngtcp2_crypto_conn_ref* conn_ref) {
  if (int rv = gnutls_init(
          &session_, GNUTLS_SERVER | GNUTLS_NO_AUTO_SEND_TICKET | GNUTLS_NO_END_OF_EARLY_DATA);
      rv != 0) {
    return TlsError("gnutls_init", rv);
  }
  if (int rv = gnutls_priority_set_direct(session_, kPriority, nullptr); rv != 0) {
    return TlsError("gnutls_priority_set_direct", rv);
  }
  gnutls_handshake_set_hook_function(session_, GNUTLS_HANDSHAKE_CLIENT_HELLO, GNUTLS_HOOK_POST,
                                     ServerClientHelloHook);
  if (ngtcp2_crypto_gnutls_configure_server_session(session_) != 0) {
    return Internal("ngtcp2_crypto_gnutls_configure_server_session failed");
  }
  gnutls_session_set_ptr(session_, conn_ref);
  if (int rv = gnutls_credentials_set(session_, GNUTLS_CRD_CERTIFICATE, ctx.creds()); rv != 0) {
    return TlsError("gnutls_credentials_set", rv);
  }
  auto datums = AlpnDatums(ctx.alpns());
  gnutls_alpn_set_protocols(session_, datums.data(), static_cast<unsigned>(datums.size()),
                            GNUTLS_ALPN_MANDATORY | GNUTLS_ALPN_SERVER_PRECEDENCE);
  alpn_summary_ = JoinAlpns(ctx.alpns());
  return Status::Ok();
}

Status TlsSession::InitClient(const TlsClientContext& ctx, const std::string& sni,
                              ngtcp2_crypto_conn_ref* conn_ref) {
  is_client_ = true;
  if (int rv = gnutls_init(&session_, GNUTLS_CLIENT | GNUTLS_NO_END_OF_EARLY_DATA); rv != 0) {
    return TlsError("gnutls_init", rv);
  }
  if (int rv = gnutls_priority_set_direct(session_, kPriority, nullptr); rv != 0) {
    return TlsError("gnutls_priority_set_direct", rv);
  }
  if (ngtcp2_crypto_gnutls_configure_client_session(session_) != 0) {
    return Internal("ngtcp2_crypto_gnutls_configure_client_session failed");
  }
  gnutls_session_set_ptr(session_, conn_ref);
  if (int rv = gnutls_credentials_set(session_, GNUTLS_CRD_CERTIFICATE, ctx.creds()); rv != 0) {
    return TlsError("gnutls_credentials_set", rv);
  }
  auto datums = AlpnDatums(ctx.alpns());
  gnutls_alpn_set_protocols(session_, datums.data(), static_cast<unsigned>(datums.size()),
                            GNUTLS_ALPN_MANDATORY);
  alpn_summary_ = JoinAlpns(ctx.alpns());
  // SNI is a DNS name; never send an IP literal (RFC 6066 §3).
  unsigned char buf[16];
  bool numeric =
      inet_pton(AF_INET, sni.c_str(), buf) == 1 || inet_pton(AF_INET6, sni.c_str(), buf) == 1;
  if (!sni.empty() && !numeric) {
    gnutls_server_name_set(session_, GNUTLS_NAME_DNS, sni.data(), sni.size());
  }
  if (!ctx.insecure()) {
    if (sni.empty()) return InvalidArgument("a server name is required to verify the certificate");
    verify_name_ = sni;
    gnutls_session_set_verify_cert(session_, verify_name_.c_str(), 0);
  }
  return Status::Ok();
}

std::string TlsSession::CipherName() const {
  const char* name = gnutls_cipher_get_name(gnutls_cipher_get(session_));
  return name ? name : "";
}

std::string TlsSession::SelectedAlpn() const {
  gnutls_datum_t alpn;
  if (!session_ || gnutls_alpn_get_selected_protocol(session_, &alpn) != 0) return "";
  return std::string(reinterpret_cast<const char*>(alpn.data), alpn.size);
}

std::string TlsSession::FailureDetail() const {
  if (!session_) return "";
  if (is_client_) {
    unsigned status = gnutls_session_get_verify_cert_status(session_);
    if (status != 0) {
      gnutls_datum_t out{};
      std::string msg = "server certificate verification failed";
      if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) == 0) {
        msg += ": " + std::string(reinterpret_cast<const char*>(out.data), out.size);
        gnutls_free(out.data);
      }
      return msg;
    }
    return "";
  }
  if (SelectedAlpn().empty()) {
    return "no application protocol in common (ALPN); this server accepts: " + alpn_summary_;
  }
  return "";
}

namespace {
struct X509Guard {
  gnutls_x509_crt_t crt = nullptr;
  gnutls_x509_privkey_t key = nullptr;
  ~X509Guard() {
    if (crt) gnutls_x509_crt_deinit(crt);
    if (key) gnutls_x509_privkey_deinit(key);
  }
};

std::string TakeDatum(gnutls_datum_t* d) {
  std::string s(reinterpret_cast<const char*>(d->data), d->size);
  gnutls_free(d->data);
  return s;
}
}  // namespace

Result<PemPair> GenerateSelfSignedCert(const std::string& name, int days) {
  if (name.empty() || name.size() > 253)
    return InvalidArgument("certificate name must be 1..253 bytes");
  if (days <= 0 || days > 3650) return InvalidArgument("validity must be 1..3650 days");
  X509Guard g;
  if (int rv = gnutls_x509_privkey_init(&g.key); rv != 0) return TlsError("privkey_init", rv);
  if (int rv = gnutls_x509_privkey_generate(g.key, GNUTLS_PK_ECDSA,
                                            GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
      rv != 0) {
    return TlsError("key generation", rv);
  }
  if (int rv = gnutls_x509_crt_init(&g.crt); rv != 0) return TlsError("crt_init", rv);
  unsigned char serial[16];
  gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial));
  serial[0] &= 0x7f;  // positive INTEGER
  time_t now = time(nullptr);
  int rv = 0;
  auto check = [&](int r) {
    if (rv == 0 && r != 0) rv = r;
  };
  check(gnutls_x509_crt_set_version(g.crt, 3));
  check(gnutls_x509_crt_set_serial(g.crt, serial, sizeof(serial)));
  check(gnutls_x509_crt_set_activation_time(g.crt, now - 3600));
  check(gnutls_x509_crt_set_expiration_time(g.crt, now + static_cast<time_t>(days) * 86400));
  check(gnutls_x509_crt_set_dn_by_oid(g.crt, GNUTLS_OID_X520_COMMON_NAME, 0, name.data(),
                                      static_cast<unsigned>(name.size())));
  check(gnutls_x509_crt_set_subject_alt_name(g.crt, GNUTLS_SAN_DNSNAME, name.data(),
                                             static_cast<unsigned>(name.size()), GNUTLS_FSAN_SET));
  unsigned char v4[4] = {127, 0, 0, 1};
  unsigned char v6[16] = {};
  v6[15] = 1;
  check(
      gnutls_x509_crt_set_subject_alt_name(g.crt, GNUTLS_SAN_IPADDRESS, v4, 4, GNUTLS_FSAN_APPEND));
  check(gnutls_x509_crt_set_subject_alt_name(g.crt, GNUTLS_SAN_IPADDRESS, v6, 16,
                                             GNUTLS_FSAN_APPEND));
  check(gnutls_x509_crt_set_key(g.crt, g.key));
  // A self-signed end-entity certificate that is its own trust anchor (CA:FALSE).
  check(gnutls_x509_crt_set_basic_constraints(g.crt, 0, -1));
  check(gnutls_x509_crt_set_key_usage(g.crt, GNUTLS_KEY_DIGITAL_SIGNATURE));
  check(gnutls_x509_crt_set_key_purpose_oid(g.crt, GNUTLS_KP_TLS_WWW_SERVER, 0));
  if (rv != 0) return TlsError("certificate fields", rv);
  if (int r = gnutls_x509_crt_sign2(g.crt, g.crt, g.key, GNUTLS_DIG_SHA256, 0); r != 0) {
    return TlsError("self-signing", r);
  }
  PemPair out;
  gnutls_datum_t d{};
  if (int r = gnutls_x509_crt_export2(g.crt, GNUTLS_X509_FMT_PEM, &d); r != 0) {
    return TlsError("certificate export", r);
  }
  out.cert_pem = TakeDatum(&d);
  if (int r = gnutls_x509_privkey_export2(g.key, GNUTLS_X509_FMT_PEM, &d); r != 0) {
    return TlsError("key export", r);
  }
  out.key_pem = TakeDatum(&d);
  return out;
}

}  // namespace kvcs::quic
