#include "transport/session.h"

#include <cstdio>

namespace kvcs::transport {
namespace {

// RFC 9000 §20.1 transport error names.
const char* TransportCodeName(uint64_t code) {
  static const char* const kNames[] = {"NO_ERROR",
                                       "INTERNAL_ERROR",
                                       "CONNECTION_REFUSED",
                                       "FLOW_CONTROL_ERROR",
                                       "STREAM_LIMIT_ERROR",
                                       "STREAM_STATE_ERROR",
                                       "FINAL_SIZE_ERROR",
                                       "FRAME_ENCODING_ERROR",
                                       "TRANSPORT_PARAMETER_ERROR",
                                       "CONNECTION_ID_LIMIT_ERROR",
                                       "PROTOCOL_VIOLATION",
                                       "INVALID_TOKEN",
                                       "APPLICATION_ERROR",
                                       "CRYPTO_BUFFER_EXCEEDED",
                                       "KEY_UPDATE_ERROR",
                                       "AEAD_LIMIT_REACHED",
                                       "NO_VIABLE_PATH"};
  return code < sizeof(kNames) / sizeof(kNames[0]) ? kNames[code] : "UNKNOWN_ERROR";
}

// RFC 8446 §6 / RFC 7301 alert names (the ones a QUIC handshake can produce).
const char* AlertName(uint64_t alert) {
  switch (alert) {
    case 10:
      return "unexpected_message";
    case 20:
      return "bad_record_mac";
    case 40:
      return "handshake_failure";
    case 42:
      return "bad_certificate";
    case 43:
      return "unsupported_certificate";
    case 44:
      return "certificate_revoked";
    case 45:
      return "certificate_expired";
    case 46:
      return "certificate_unknown";
    case 47:
      return "illegal_parameter";
    case 48:
      return "unknown_ca";
    case 50:
      return "decode_error";
    case 51:
      return "decrypt_error";
    case 70:
      return "protocol_version";
    case 80:
      return "internal_error";
    case 109:
      return "missing_extension";
    case 110:
      return "unsupported_extension";
    case 112:
      return "unrecognized_name";
    case 116:
      return "certificate_required";
    case 120:
      return "no_application_protocol";
    default:
      return "unknown_alert";
  }
}

}  // namespace

std::string CloseInfo::ToString() const {
  std::string who = by_peer ? "closed by peer" : "closed locally";
  char code_hex[32];
  snprintf(code_hex, sizeof(code_hex), "0x%llx", static_cast<unsigned long long>(code));
  std::string s;
  switch (kind) {
    case Kind::kApplication:
      s = who + " with application error " + code_hex;
      break;
    case Kind::kTransport:
      s = who + " with transport error " + TransportCodeName(code) + " (" + code_hex + ")";
      break;
    case Kind::kTls:
      s = std::string("TLS handshake failed (") + (by_peer ? "peer" : "we") + " sent alert " +
          AlertName(code & 0xff) + ", QUIC error " + code_hex + ")";
      if ((code & 0xff) == 120) s += ": no ALPN protocol in common";
      break;
    case Kind::kIdleTimeout:
      s = "idle timeout: the peer stopped responding";
      break;
    case Kind::kHandshakeTimeout:
      s = "handshake timeout";
      break;
    case Kind::kLocalError:
      s = "local error";
      break;
  }
  if (!reason.empty()) s += ": " + reason;
  return s;
}

}  // namespace kvcs::transport
