// The kvcs bearer token: compact JWS/JWT, ES256 only (see token.h).
#include "auth/token.h"

#include <jwt.h>

#include <algorithm>
#include <array>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/base64.h"
#include "common/hex.h"
#include "common/pem_key.h"
#include "common/strict_json.h"

namespace kvcs::auth {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr std::array<std::string_view, 4> kActionNames = {"lookup", "register", "publish",
                                                          "subscribe"};
// Claims nest: object > grants > grant > prefixes > prefix.
constexpr int kMaxClaimsDepth = 6;
constexpr std::string_view kAlg = "ES256";
// NumericDate bound: JSON-safe integers (2^53 - 1).
constexpr int64_t kMaxTime = (int64_t{1} << 53) - 1;

Status Err(TokenError e, std::string msg) {
  Code code = Code::kPermissionDenied;
  if (e == TokenError::kMalformed || e == TokenError::kTooLarge || e == TokenError::kBadClaims ||
      e == TokenError::kBadKey) {
    code = Code::kInvalidArgument;
  }
  return Status(code, "token: " + std::move(msg), static_cast<int>(e));
}

Status BadClaims(std::string msg) { return Err(TokenError::kBadClaims, std::move(msg)); }

bool IsFieldText(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

Result<int64_t> Time(const json& v, const char* name) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxTime) {
    return BadClaims(std::string(name) + " is not a NumericDate (an integer of seconds)");
  }
  return v.get<int64_t>();
}

Result<std::string> Text(const json& v, const char* name, size_t max) {
  if (!v.is_string() || !IsFieldText(v.get_ref<const std::string&>(), max)) {
    return BadClaims(std::string(name) + " is not 1.." + std::to_string(max) +
                     " bytes of printable ASCII");
  }
  return v.get<std::string>();
}

Result<Grant> ParseGrant(const json& g) {
  if (!g.is_object()) return BadClaims("a grant is not an object");
  Grant out;
  for (const auto& [k, v] : g.items()) {
    if (k == "actions") {
      if (!v.is_array() || v.empty() || v.size() > kActionNames.size()) {
        return BadClaims("actions is not an array of 1..4 actions");
      }
      for (const json& a : v) {
        if (!a.is_string()) return BadClaims("an action is not a string");
        KVCS_ASSIGN_OR_RETURN(Action act, ActionFromName(a.get_ref<const std::string&>()));
        if (std::find(out.actions.begin(), out.actions.end(), act) != out.actions.end()) {
          return BadClaims("an action is listed twice");
        }
        out.actions.push_back(act);
      }
    } else if (k == "prefixes") {
      if (!v.is_array() || v.empty() || v.size() > kMaxPrefixesPerGrant) {
        return BadClaims("prefixes is not an array of 1.." + std::to_string(kMaxPrefixesPerGrant) +
                         " prefixes");
      }
      for (const json& p : v) {
        if (!p.is_array() || p.empty() || p.size() > kMaxPrefixFields) {
          return BadClaims("a prefix is not an array of 1.." + std::to_string(kMaxPrefixFields) +
                           " fields");
        }
        Namespace ns;
        for (const json& f : p) {
          KVCS_ASSIGN_OR_RETURN(std::string field, Text(f, "a prefix field", kMaxFieldBytes));
          ns.push_back(std::move(field));
        }
        out.prefixes.push_back(std::move(ns));
      }
    } else {
      return BadClaims("a grant has unknown member \"" + k + "\"");
    }
  }
  if (out.actions.empty() || out.prefixes.empty()) {
    return BadClaims("a grant needs actions and prefixes");
  }
  return out;
}

ojson GrantJson(const Grant& g) {
  ojson o;
  ojson actions = ojson::array();
  for (Action a : g.actions) actions.push_back(std::string(ActionName(a)));
  o["actions"] = std::move(actions);
  ojson prefixes = ojson::array();
  for (const Namespace& ns : g.prefixes) prefixes.push_back(ns);
  o["prefixes"] = std::move(prefixes);
  return o;
}

struct JwtDeleter {
  void operator()(jwt_t* j) const { jwt_free(j); }
};
using Jwt = std::unique_ptr<jwt_t, JwtDeleter>;

}  // namespace

std::string_view ActionName(Action a) {
  auto i = static_cast<size_t>(a);
  return i < kActionNames.size() ? kActionNames[i] : "unknown";
}

Result<Action> ActionFromName(std::string_view name) {
  for (size_t i = 0; i < kActionNames.size(); ++i) {
    if (kActionNames[i] == name) return static_cast<Action>(i);
  }
  return BadClaims("unknown action (use lookup, register, publish or subscribe)");
}

Namespace ScopeNamespace(const Digest& scope_id) { return {"kvcs-1", ToHex(scope_id)}; }

bool Claims::Allows(Action action, const Namespace& ns) const {
  for (const Grant& g : grants) {
    if (std::find(g.actions.begin(), g.actions.end(), action) == g.actions.end()) continue;
    for (const Namespace& p : g.prefixes) {
      if (p.size() <= ns.size() && std::equal(p.begin(), p.end(), ns.begin())) return true;
    }
  }
  return false;
}

std::string_view TokenErrorName(TokenError e) {
  switch (e) {
    case TokenError::kNone:
      return "none";
    case TokenError::kMalformed:
      return "malformed";
    case TokenError::kTooLarge:
      return "too_large";
    case TokenError::kAlgNotAllowed:
      return "alg_not_allowed";
    case TokenError::kUnknownKid:
      return "unknown_kid";
    case TokenError::kBadSignature:
      return "bad_signature";
    case TokenError::kExpired:
      return "expired";
    case TokenError::kNotYetValid:
      return "not_yet_valid";
    case TokenError::kBadClaims:
      return "bad_claims";
    case TokenError::kBadKey:
      return "bad_key";
  }
  return "unknown";
}

std::string Base64UrlEncode(std::string_view bytes) {
  return Base64Encode(ByteSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                      Base64Alphabet::kUrl);
}

Result<std::string> Base64UrlDecode(std::string_view text) {
  auto bytes = Base64Decode(text, Base64Alphabet::kUrl);
  if (!bytes.ok()) return Err(TokenError::kMalformed, "not base64url: " + bytes.status().message());
  return std::string(bytes->begin(), bytes->end());
}

Result<Claims> ParseClaims(std::string_view text) {
  auto j = ParseStrictJson(text, kMaxTokenBytes, kMaxClaimsDepth);
  if (!j.ok()) return Err(TokenError::kMalformed, "claims: " + j.status().message());
  if (!j->is_object()) return BadClaims("claims are not an object");
  Claims c;
  bool has_exp = false, has_sub = false, has_grants = false;
  for (const auto& [k, v] : j->items()) {
    if (k == "sub") {
      KVCS_ASSIGN_OR_RETURN(c.sub, Text(v, "sub", kMaxSubjectBytes));
      has_sub = true;
    } else if (k == "exp") {
      KVCS_ASSIGN_OR_RETURN(c.exp, Time(v, "exp"));
      has_exp = true;
    } else if (k == "nbf") {
      KVCS_ASSIGN_OR_RETURN(c.nbf, Time(v, "nbf"));
    } else if (k == "iat") {
      KVCS_ASSIGN_OR_RETURN(c.iat, Time(v, "iat"));
    } else if (k == "iss") {
      KVCS_ASSIGN_OR_RETURN(c.iss, Text(v, "iss", kMaxSubjectBytes));
    } else if (k == "jti") {
      KVCS_ASSIGN_OR_RETURN(c.jti, Text(v, "jti", kMaxSubjectBytes));
    } else if (k == "grants") {
      if (!v.is_array() || v.empty() || v.size() > kMaxGrants) {
        return BadClaims("grants is not an array of 1.." + std::to_string(kMaxGrants) + " grants");
      }
      for (const json& g : v) {
        KVCS_ASSIGN_OR_RETURN(Grant grant, ParseGrant(g));
        c.grants.push_back(std::move(grant));
      }
      has_grants = true;
    } else {
      return BadClaims("unknown claim \"" + k + "\"");
    }
  }
  if (!has_sub || !has_exp || !has_grants) return BadClaims("sub, exp and grants are required");
  return c;
}

std::string ClaimsJson(const Claims& c) {
  ojson o;
  o["sub"] = c.sub;
  if (c.iss) o["iss"] = *c.iss;
  if (c.iat) o["iat"] = *c.iat;
  if (c.nbf) o["nbf"] = *c.nbf;
  o["exp"] = c.exp;
  if (c.jti) o["jti"] = *c.jti;
  ojson grants = ojson::array();
  for (const Grant& g : c.grants) grants.push_back(GrantJson(g));
  o["grants"] = std::move(grants);
  return o.dump();
}

Result<std::string> Mint(const Claims& claims, std::string_view kid, std::string_view private_pem) {
  if (!IsFieldText(kid, kMaxKidBytes)) return Err(TokenError::kBadKey, "kid is not 1..256 bytes");
  std::string payload = ClaimsJson(claims);
  auto check = ParseClaims(payload);
  if (!check.ok() || !(*check == claims)) return BadClaims("claims do not survive a round trip");
  auto key = ReadPrivatePem(private_pem);
  if (!key.ok() || key->type != KeyType::kP256) {
    return Err(TokenError::kBadKey, "the signing key is not an EC P-256 private key PEM");
  }
  jwt_t* raw = nullptr;
  if (jwt_new(&raw) != 0) return Internal("token: jwt_new failed");
  Jwt jwt(raw);
  std::string pem(private_pem);
  std::string kid_s(kid);
  if (jwt_set_alg(jwt.get(), JWT_ALG_ES256, reinterpret_cast<const unsigned char*>(pem.data()),
                  int(pem.size())) != 0 ||
      jwt_add_header(jwt.get(), "kid", kid_s.c_str()) != 0 ||
      jwt_add_grants_json(jwt.get(), payload.c_str()) != 0) {
    return Internal("token: libjwt refused the token");
  }
  std::fill(pem.begin(), pem.end(), '\0');
  char* out = jwt_encode_str(jwt.get());
  if (!out) return Internal("token: libjwt could not sign (ES256)");
  std::string token(out);
  free(out);  // NOLINT: libjwt allocates with malloc
  return token;
}

Status Keyring::Add(std::string kid, std::string_view public_pem) {
  if (!IsFieldText(kid, kMaxKidBytes)) return Err(TokenError::kBadKey, "kid is not 1..256 bytes");
  auto key = ReadPublicPem(public_pem);
  if (!key.ok() || key->type != KeyType::kP256) {
    return Err(TokenError::kBadKey, "kid " + kid + ": not an EC P-256 public key PEM");
  }
  std::string spki = PublicPemOf(key->pkey.get());
  if (!keys_.emplace(std::move(kid), std::move(spki)).second) {
    return Status(Code::kAlreadyExists, "token: a key with this kid is already in the keyring");
  }
  return Status::Ok();
}

const std::string* Keyring::Find(std::string_view kid) const {
  auto it = keys_.find(kid);
  return it == keys_.end() ? nullptr : &it->second;
}

Result<Claims> Verifier::Verify(std::string_view token, int64_t now_s) const {
  if (token.size() > kMaxTokenBytes) {
    return Err(TokenError::kTooLarge, "longer than " + std::to_string(kMaxTokenBytes) + " bytes");
  }
  size_t d1 = token.find('.');
  size_t d2 = d1 == token.npos ? token.npos : token.find('.', d1 + 1);
  if (d2 == token.npos || token.find('.', d2 + 1) != token.npos || d1 == 0 || d2 == d1 + 1 ||
      d2 + 1 == token.size()) {
    return Err(TokenError::kMalformed, "not three non-empty dot-separated parts");
  }
  KVCS_ASSIGN_OR_RETURN(std::string header_text, Base64UrlDecode(token.substr(0, d1)));
  KVCS_ASSIGN_OR_RETURN(std::string payload_text,
                        Base64UrlDecode(token.substr(d1 + 1, d2 - d1 - 1)));
  KVCS_RETURN_IF_ERROR(Base64UrlDecode(token.substr(d2 + 1)).status());
  auto header = ParseStrictJson(header_text, kMaxTokenBytes, 1);
  if (!header.ok() || !header->is_object()) {
    return Err(TokenError::kMalformed, "the header is not a JSON object");
  }
  std::string kid;
  bool has_alg = false;
  for (const auto& [k, v] : header->items()) {
    if (k == "alg") {
      if (!v.is_string() || v.get_ref<const std::string&>() != kAlg) {
        return Err(TokenError::kAlgNotAllowed, "alg is not ES256 (the only one accepted)");
      }
      has_alg = true;
    } else if (k == "kid") {
      if (!v.is_string() || !IsFieldText(v.get_ref<const std::string&>(), kMaxKidBytes)) {
        return Err(TokenError::kMalformed, "kid is not 1..256 bytes of printable ASCII");
      }
      kid = v.get<std::string>();
    } else if (k == "typ") {
      if (!v.is_string() || v.get_ref<const std::string&>() != "JWT") {
        return Err(TokenError::kMalformed, "typ is not JWT");
      }
    } else {
      return Err(TokenError::kMalformed, "header member \"" + k + "\" is not accepted");
    }
  }
  if (!has_alg) return Err(TokenError::kAlgNotAllowed, "no alg");
  if (kid.empty()) return Err(TokenError::kMalformed, "no kid");
  const std::string* pem = keys_.Find(kid);
  if (!pem) return Err(TokenError::kUnknownKid, "no key for kid " + kid);
  jwt_t* raw = nullptr;
  std::string token_z(token);
  int rc = jwt_decode(&raw, token_z.c_str(), reinterpret_cast<const unsigned char*>(pem->data()),
                      int(pem->size()));
  Jwt jwt(raw);
  if (rc != 0 || !jwt) return Err(TokenError::kBadSignature, "the signature does not verify");
  if (jwt_get_alg(jwt.get()) != JWT_ALG_ES256) {
    return Err(TokenError::kAlgNotAllowed, "libjwt saw an alg other than ES256");
  }
  KVCS_ASSIGN_OR_RETURN(Claims c, ParseClaims(payload_text));
  if (now_s >= c.exp + leeway_s_) return Err(TokenError::kExpired, "expired");
  if (c.nbf && now_s + leeway_s_ < *c.nbf) return Err(TokenError::kNotYetValid, "not yet valid");
  return c;
}

}  // namespace kvcs::auth
