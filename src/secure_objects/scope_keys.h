// KVCS keys for secure objects: from a scope's secrets to per-publication track base keys.
//
// Members of a KVCS scope share its scope key (KVSP). Secure objects need a track base key per
// (publication, Key ID); KVCS derives it, for every track of one publication (namespace):
//   prk            = HKDF-Extract(SHA-256, salt = "kvcs-1 secure objects", IKM = scope secret)
//   track_base_key = HKDF-Expand(SHA-256, prk,
//                      "kvcs-1 track base key " ‖ MOQT-serialized Track Namespace ‖ u64(KeyID), 32)
// The draft's KDF then mixes in each track's name, so tracks of a publication get distinct keys
// and salts while sharing one base key per Key ID (the draft scopes Key IDs to a namespace).
//
// Key IDs: a ScopeKeyring maps Key ID (an epoch) -> scope secret. Epoch 0's secret is the KVSP
// scope key itself, so every member can decrypt with what it already has; a later epoch is a new
// secret handed out like the scope key. The namespace (Scope ID, Block Keys) stays derived from
// the KVSP scope key, so a publication keeps its namespace across rotations: a publisher moves
// to the new Key ID between objects, and a consumer holding both epochs reads both.
// Pure functions; a ScopeKeyring is a value type.
#ifndef KVCS_SECURE_OBJECTS_SCOPE_KEYS_H_
#define KVCS_SECURE_OBJECTS_SCOPE_KEYS_H_

#include <cstdint>
#include <map>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_messages.h"

namespace kvcs::secure {

inline constexpr std::string_view kScopeExtractSalt = "kvcs-1 secure objects";
inline constexpr std::string_view kTrackBaseKeyLabel = "kvcs-1 track base key ";
inline constexpr size_t kTrackBaseKeyBytes = 32;
inline constexpr size_t kMinScopeSecretBytes = 16;
inline constexpr size_t kMaxScopeSecretBytes = 64;
// Epochs a keyring holds: a bound on what a receiver caches and searches.
inline constexpr size_t kMaxScopeEpochs = 64;

Result<Bytes> DeriveTrackBaseKey(ByteSpan scope_secret, const moqt::TrackNamespace& ns,
                                 uint64_t key_id);

class ScopeKeyring {
 public:
  ScopeKeyring() = default;
  // Epoch 0 = the KVSP scope key.
  static ScopeKeyring FromScopeKey(ByteSpan scope_key);

  // kBadKey for a secret outside 16..64 bytes, kResourceExhausted past kMaxScopeEpochs; a Key ID
  // added twice replaces the secret.
  Status Add(uint64_t key_id, ByteSpan secret);
  const Bytes* Find(uint64_t key_id) const;
  size_t size() const { return secrets_.size(); }
  // The highest Key ID held (REQUIRES size() > 0): the one a publisher uses by default.
  uint64_t newest() const { return secrets_.rbegin()->first; }

 private:
  std::map<uint64_t, Bytes> secrets_;
};

}  // namespace kvcs::secure

#endif  // KVCS_SECURE_OBJECTS_SCOPE_KEYS_H_
