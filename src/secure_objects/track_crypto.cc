#include "secure_objects/track_crypto.h"

#include <openssl/crypto.h>

#include <utility>

#include "secure_objects/secure_object_error.h"

namespace kvcs::secure {

Result<TrackKeyCache::Entry*> TrackKeyCache::Get(const ScopeKeyring& keyring,
                                                 const moqt::FullTrackName& track,
                                                 CipherSuite suite, uint64_t key_id) {
  if (last_ && last_->suite == suite && last_->key_id == key_id && last_->track == track) {
    return last_->entry;
  }
  const Bytes ftn = SerializeFullTrackName(track);
  std::string k(ftn.begin(), ftn.end());
  k.push_back(static_cast<char>(static_cast<uint16_t>(suite) >> 8));
  k.push_back(static_cast<char>(static_cast<uint16_t>(suite)));
  for (int i = 7; i >= 0; --i) k.push_back(static_cast<char>(key_id >> (8 * i)));
  auto it = entries_.find(k);
  if (it != entries_.end()) {
    last_ = Last{track, suite, key_id, it->second.get()};
    return it->second.get();
  }
  const Bytes* secret = keyring.Find(key_id);
  if (secret == nullptr) {
    return SecureStatus(Code::kNotFound, SecureObjectError::kUnknownKeyId,
                        "Key ID " + std::to_string(key_id) + " is not in the keyring (" +
                            std::to_string(keyring.size()) + " epochs held)");
  }
  KVCS_ASSIGN_OR_RETURN(Bytes base, DeriveTrackBaseKey(*secret, track.track_namespace, key_id));
  auto m = DeriveObjectKey(suite, base, ftn, key_id);
  OPENSSL_cleanse(base.data(), base.size());
  if (!m.ok()) return m.status();
  auto aead = AeadKey::Create(suite, m->key);
  OPENSSL_cleanse(m->key.data(), m->key.size());
  if (!aead.ok()) return aead.status();
  if (entries_.size() >= kMaxCachedTrackKeys) {
    entries_.clear();
    last_.reset();
  }
  auto e = std::make_unique<Entry>(Entry{std::move(*aead), m->salt});
  Entry* raw = e.get();
  entries_.emplace(std::move(k), std::move(e));
  last_ = Last{track, suite, key_id, raw};
  return raw;
}

ObjectSealer::ObjectSealer(ScopeKeyring keyring, CipherSuite suite, uint64_t key_id)
    : keyring_(std::move(keyring)),
      suite_(suite),
      key_id_(key_id),
      properties_(ProtectedProperties(suite, key_id)) {}

Status ObjectSealer::SetKeyId(uint64_t key_id) {
  if (keyring_.Find(key_id) == nullptr) {
    return SecureStatus(Code::kNotFound, SecureObjectError::kUnknownKeyId,
                        "Key ID " + std::to_string(key_id) + " is not in the keyring");
  }
  key_id_ = key_id;
  properties_ = ProtectedProperties(suite_, key_id);
  return Status::Ok();
}

Result<ObjectSealer::Sealed> ObjectSealer::Seal(const moqt::FullTrackName& track,
                                                const ObjectPosition& pos, ByteSpan payload) {
  KVCS_ASSIGN_OR_RETURN(TrackKeyCache::Entry * e, cache_.Get(keyring_, track, suite_, key_id_));
  Sealed out;
  out.properties = properties_;
  KVCS_ASSIGN_OR_RETURN(
      out.payload, SealPayload(e->key, e->salt, pos, AsBytes(out.properties[0].bytes), payload));
  return out;
}

Result<OpenedPayload> ObjectOpener::Open(const moqt::FullTrackName& track,
                                         const ObjectPosition& pos,
                                         const moqt::Properties* properties, ByteSpan payload) {
  auto r = [&]() -> Result<OpenedPayload> {
    KVCS_ASSIGN_OR_RETURN(KeyRef ref, ParseKeyRef(properties));
    KVCS_ASSIGN_OR_RETURN(TrackKeyCache::Entry * e,
                          cache_.Get(keyring_, track, ref.suite, ref.key_id));
    return OpenPayload(e->key, e->salt, pos, ref.immutable, payload);
  }();
  ++(r.ok() ? opened_ : failed_);
  return r;
}

}  // namespace kvcs::secure
