// The draft's key schedule (§3, §4 of shared/specs/moq-secure-objects.md): from a track base key
// and (Full Track Name, cipher suite, Key ID) to the object key and salt, and the per-object
// nonce. HKDF (RFC 5869) from OpenSSL's EVP_KDF "HKDF" with the suite's hash:
//   secret = HKDF-Extract(salt = empty, IKM = track_base_key)
//   key    = HKDF-Expand(secret, "MOQ 1.0 Secure Objects Secret key " ‖ FTN ‖ u16(suite) ‖
//   u64(KeyID), Nk) salt   = HKDF-Expand(secret, "MOQ 1.0 Secret salt " ‖ FTN ‖ u16(suite) ‖
//   u64(KeyID), Nn) nonce  = salt XOR (u64(GroupID) ‖ u32(ObjectID))        (Object ID < 2^32)
// FTN is the Full Track Name as MOQT serializes it (vi64 field count, vi64 length + bytes per
// field, vi64 length + bytes of the name). Integers big-endian. Pure functions, thread-safe.
#ifndef KVCS_SECURE_OBJECTS_KEY_SCHEDULE_H_
#define KVCS_SECURE_OBJECTS_KEY_SCHEDULE_H_

#include <array>
#include <cstdint>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_messages.h"
#include "secure_objects/cipher_suite.h"

namespace kvcs::secure {

inline constexpr std::string_view kKeyLabel = "MOQ 1.0 Secure Objects Secret key ";
inline constexpr std::string_view kSaltLabel = "MOQ 1.0 Secret salt ";
// The largest Object ID a nonce can carry (32 bits).
inline constexpr uint64_t kMaxObjectId = 0xFFFFFFFFu;
// A track base key: any length HKDF accepts; KVCS derives 32 bytes (scope_keys.h).
inline constexpr size_t kMaxBaseKeyBytes = 64;

using Nonce = std::array<uint8_t, kNonceBytes>;

struct ObjectKeyMaterial {
  Bytes key;   // Nk bytes
  Nonce salt;  // Nn bytes
};

// RFC 5869 with the suite's hash; `salt` empty means HashLen zeros (as RFC 5869 says).
Result<Bytes> HkdfExtract(SuiteHash hash, ByteSpan salt, ByteSpan ikm);
Result<Bytes> HkdfExpand(SuiteHash hash, ByteSpan prk, ByteSpan info, size_t length);

// MOQT's serialization of a Full Track Name (moqt::WriteFullTrackName).
Bytes SerializeFullTrackName(const moqt::FullTrackName& ftn);

// The key and salt of (base key, serialized FTN, suite, Key ID). kBadKey for an empty or
// oversized base key.
Result<ObjectKeyMaterial> DeriveObjectKey(CipherSuite suite, ByteSpan track_base_key,
                                          ByteSpan serialized_ftn, uint64_t key_id);

// salt XOR (u64 group ‖ u32 object); kObjectIdTooLarge when object > kMaxObjectId.
Result<Nonce> MakeNonce(const Nonce& salt, uint64_t group, uint64_t object);

}  // namespace kvcs::secure

#endif  // KVCS_SECURE_OBJECTS_KEY_SCHEDULE_H_
