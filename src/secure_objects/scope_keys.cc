#include "secure_objects/scope_keys.h"

#include "moqt/moqt_fields.h"
#include "moqt/moqt_wire_io.h"
#include "secure_objects/key_schedule.h"
#include "secure_objects/secure_object_error.h"

namespace kvcs::secure {

Result<Bytes> DeriveTrackBaseKey(ByteSpan scope_secret, const moqt::TrackNamespace& ns,
                                 uint64_t key_id) {
  if (scope_secret.size() < kMinScopeSecretBytes || scope_secret.size() > kMaxScopeSecretBytes) {
    return SecureStatus(Code::kInvalidArgument, SecureObjectError::kBadKey,
                        "a scope secret of " + std::to_string(scope_secret.size()) + " bytes");
  }
  KVCS_ASSIGN_OR_RETURN(Bytes prk,
                        HkdfExtract(SuiteHash::kSha256, AsBytes(kScopeExtractSalt), scope_secret));
  Bytes info(kTrackBaseKeyLabel.begin(), kTrackBaseKeyLabel.end());
  moqt::WireWriter w(&info);
  moqt::WriteNamespace(w, ns);
  for (int i = 7; i >= 0; --i) info.push_back(static_cast<uint8_t>(key_id >> (8 * i)));
  return HkdfExpand(SuiteHash::kSha256, prk, info, kTrackBaseKeyBytes);
}

ScopeKeyring ScopeKeyring::FromScopeKey(ByteSpan scope_key) {
  ScopeKeyring k;
  (void)k.Add(0, scope_key);
  return k;
}

Status ScopeKeyring::Add(uint64_t key_id, ByteSpan secret) {
  if (secret.size() < kMinScopeSecretBytes || secret.size() > kMaxScopeSecretBytes) {
    return SecureStatus(Code::kInvalidArgument, SecureObjectError::kBadKey,
                        "a scope secret of " + std::to_string(secret.size()) + " bytes (16..64)");
  }
  if (!secrets_.count(key_id) && secrets_.size() >= kMaxScopeEpochs) {
    return SecureStatus(Code::kResourceExhausted, SecureObjectError::kBadKey,
                        "more than " + std::to_string(kMaxScopeEpochs) + " epochs");
  }
  secrets_[key_id] = Bytes(secret.begin(), secret.end());
  return Status::Ok();
}

const Bytes* ScopeKeyring::Find(uint64_t key_id) const {
  auto it = secrets_.find(key_id);
  return it == secrets_.end() ? nullptr : &it->second;
}

}  // namespace kvcs::secure
