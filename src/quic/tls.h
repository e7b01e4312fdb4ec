// GnuTLS glue for QUIC (TLS 1.3 only) on ngtcp2_crypto_gnutls 0.12.1.
//
// A TlsServerContext / TlsClientContext holds the credentials shared by every connection of one
// endpoint (certificate + key, or trust anchors) and the ALPN list. A TlsSession is one GnuTLS
// session bound to one ngtcp2 connection through an ngtcp2_crypto_conn_ref (GnuTLS finds the
// connection via gnutls_session_get_ptr -> conn_ref -> get_conn).
//
// Not thread-safe: a context is used from the endpoint's executor only.
#ifndef KVCS_QUIC_TLS_H_
#define KVCS_QUIC_TLS_H_

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace kvcs::quic {

class TlsServerContext {
 public:
  ~TlsServerContext();
  // REQUIRES: alpns non-empty, each 1..255 bytes.
  static Result<std::unique_ptr<TlsServerContext>> Create(const std::string& cert_file,
                                                          const std::string& key_file,
                                                          std::vector<std::string> alpns);
  gnutls_certificate_credentials_t creds() const { return creds_; }
  const std::vector<std::string>& alpns() const { return alpns_; }

 private:
  TlsServerContext() = default;
  gnutls_certificate_credentials_t creds_ = nullptr;
  std::vector<std::string> alpns_;
};

class TlsClientContext {
 public:
  ~TlsClientContext();
  // ca_file empty -> the system trust store. insecure -> no verification at all (development).
  static Result<std::unique_ptr<TlsClientContext>> Create(const std::string& ca_file, bool insecure,
                                                          std::vector<std::string> alpns);
  gnutls_certificate_credentials_t creds() const { return creds_; }
  const std::vector<std::string>& alpns() const { return alpns_; }
  bool insecure() const { return insecure_; }

 private:
  TlsClientContext() = default;
  gnutls_certificate_credentials_t creds_ = nullptr;
  std::vector<std::string> alpns_;
  bool insecure_ = false;
};

// One TLS session. `conn_ref` must outlive the session.
class TlsSession {
 public:
  TlsSession() = default;
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  Status InitServer(const TlsServerContext& ctx, ngtcp2_crypto_conn_ref* conn_ref);
  // `sni` is the server name to send and to verify the certificate against (may be empty when
  // the context is insecure).
  Status InitClient(const TlsClientContext& ctx, const std::string& sni,
                    ngtcp2_crypto_conn_ref* conn_ref);

  gnutls_session_t native() const { return session_; }
  std::string SelectedAlpn() const;
  // The negotiated cipher's GnuTLS name ("AES-128-GCM").
  std::string CipherName() const;
  // A human explanation of a failed handshake from this side's view ("" when none is known):
  // certificate verification status, ALPN mismatch.
  std::string FailureDetail() const;

 private:
  gnutls_session_t session_ = nullptr;
  bool is_client_ = false;
  std::string alpn_summary_;  // for error messages: the protocols we offered / accept
  std::string verify_name_;   // GnuTLS keeps a pointer to it for the session's lifetime
};

// Writes a self-signed ECDSA P-256 certificate (valid `days` days, SAN DNS:`name` plus
// IP:127.0.0.1 and IP:::1) and its private key, both PEM.
struct PemPair {
  std::string cert_pem;
  std::string key_pem;
};
Result<PemPair> GenerateSelfSignedCert(const std::string& name, int days = 365);

// The name of TLS alert `alert` (e.g. "no_application_protocol").
std::string TlsAlertName(uint8_t alert);

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_TLS_H_
