// Secure objects for whole tracks: ObjectSealer (a publisher: seal each Normal object of any
// track of a scope under the current Key ID) and ObjectOpener (a receiver: open an object by the
// Key ID and suite its header names, with the keys of its ScopeKeyring). Both derive the track
// base key (scope_keys.h), then the draft's key and salt (key_schedule.h) once per (track, suite,
// Key ID) and cache them (at most kMaxCachedTrackKeys; the cache is emptied when full).
// THREADING: single-threaded (each holds OpenSSL contexts).
#ifndef KVCS_SECURE_OBJECTS_TRACK_CRYPTO_H_
#define KVCS_SECURE_OBJECTS_TRACK_CRYPTO_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_messages.h"
#include "secure_objects/cipher_suite.h"
#include "secure_objects/scope_keys.h"
#include "secure_objects/secure_object.h"

namespace kvcs::secure {

inline constexpr size_t kMaxCachedTrackKeys = 1024;

// (track, suite, Key ID) -> AEAD key and salt.
class TrackKeyCache {
 public:
  struct Entry {
    AeadKey key;
    Nonce salt;
  };
  // kUnknownKeyId when the keyring lacks key_id.
  Result<Entry*> Get(const ScopeKeyring& keyring, const moqt::FullTrackName& track,
                     CipherSuite suite, uint64_t key_id);

 private:
  // Key: serialized FTN ‖ u16 suite ‖ u64 Key ID.
  std::map<std::string, std::unique_ptr<Entry>> entries_;
  // The last lookup: consecutive objects of one track skip the serialization and the map.
  struct Last {
    moqt::FullTrackName track;
    CipherSuite suite;
    uint64_t key_id;
    Entry* entry;
  };
  std::optional<Last> last_;
};

class ObjectSealer {
 public:
  // REQUIRES keyring.Find(key_id) (else every Seal fails with kUnknownKeyId).
  ObjectSealer(ScopeKeyring keyring, CipherSuite suite, uint64_t key_id);

  // Moves to another Key ID (rotation) for the objects sealed from now on: kUnknownKeyId unless
  // the keyring holds it. AddKey first to bring in a new epoch.
  Status SetKeyId(uint64_t key_id);
  Status AddKey(uint64_t key_id, ByteSpan secret) { return keyring_.Add(key_id, secret); }
  uint64_t key_id() const { return key_id_; }
  CipherSuite suite() const { return suite_; }

  struct Sealed {
    Bytes payload;                // ct ‖ tag
    moqt::Properties properties;  // the object's properties: Immutable Properties with the Key ID
  };
  Result<Sealed> Seal(const moqt::FullTrackName& track, const ObjectPosition& pos,
                      ByteSpan payload);

 private:
  ScopeKeyring keyring_;
  CipherSuite suite_;
  uint64_t key_id_;
  moqt::Properties properties_;  // ProtectedProperties(suite_, key_id_)
  TrackKeyCache cache_;
};

class ObjectOpener {
 public:
  explicit ObjectOpener(ScopeKeyring keyring) : keyring_(std::move(keyring)) {}
  Status AddKey(uint64_t key_id, ByteSpan secret) { return keyring_.Add(key_id, secret); }

  // The payload of a Normal object, or why it is discarded: kNoKeyId, kMalformedKeyId,
  // kUnsupportedSuite, kUnknownKeyId, kObjectIdTooLarge, kTooShort, kTooLarge, kAuthFailed,
  // kMalformedPlaintext.
  Result<OpenedPayload> Open(const moqt::FullTrackName& track, const ObjectPosition& pos,
                             const moqt::Properties* properties, ByteSpan payload);

  uint64_t opened() const { return opened_; }
  uint64_t failed() const { return failed_; }

 private:
  ScopeKeyring keyring_;
  TrackKeyCache cache_;
  uint64_t opened_ = 0, failed_ = 0;
};

}  // namespace kvcs::secure

#endif  // KVCS_SECURE_OBJECTS_TRACK_CRYPTO_H_
