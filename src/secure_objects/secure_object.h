// The on-wire format of one secure object (draft-ietf-moq-secure-objects §5, §6; the choices are
// in docs/protocols/secure-objects.md, the bytes in docs/formats/secure-object.md):
//
//   Object header (readable by relays, authenticated): Group ID, Object ID, Publisher Priority,
//     and the Immutable Properties (property 0x0B) holding the Key ID and the cipher suite.
//   Payload: ct ‖ tag = AEAD(key, nonce, AAD, pt), with
//     pt    = vi64(len(payload)) ‖ payload ‖ [EPL]   EPL = u16 0x000A ‖ vi64 len ‖ bytes
//     AAD   = u64(GroupID) ‖ u32(ObjectID) ‖ u8(PublisherPriority) ‖ Immutable Properties bytes
//     nonce = salt XOR (u64(GroupID) ‖ u32(ObjectID))
//   Overhead: the vi64 length (1..9 bytes) plus the 16-byte tag, plus the properties in the header.
// Only Normal objects are protected: status objects have no payload.
// The sealer never writes an EPL; the opener accepts a well-formed one and ignores its content.
// Pure functions, thread-safe except through the AeadKey passed in.
#ifndef KVCS_SECURE_OBJECTS_SECURE_OBJECT_H_
#define KVCS_SECURE_OBJECTS_SECURE_OBJECT_H_

#include <cstdint>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_messages.h"
#include "secure_objects/cipher_suite.h"
#include "secure_objects/key_schedule.h"

namespace kvcs::secure {

// Property types inside the Immutable Properties (0x0B). The draft's Key ID type 0x2 is
// draft-22's OBJECT_DELIVERY_TIMEOUT, which relays read, so KVCS uses even types of its own;
// each in this one constant. Even types carry one vi64 value.
inline constexpr uint64_t kKeyIdPropertyType = 0x78;
// KVCS: the cipher suite, so a consumer detects it (absent: 0x0004, the draft's mandatory one).
inline constexpr uint64_t kSuitePropertyType = 0x7A;
// The Encrypted Properties List marker inside pt (a u16, as in the draft's vectors).
inline constexpr uint16_t kEncryptedPropertiesType = 0x000A;
// The largest plaintext payload protected or accepted (the session's object bound).
inline constexpr size_t kMaxPlaintextBytes = size_t{64} << 20;
// The largest ciphertext accepted: the plaintext bound plus the vi64 length and the tag (an EPL
// on top of a maximal payload is refused).
inline constexpr size_t kMaxCiphertextBytes = kMaxPlaintextBytes + 9 + kTagBytes;

// What the AAD binds besides the immutable properties.
struct ObjectPosition {
  uint64_t group = 0;
  uint64_t object = 0;
  uint8_t publisher_priority = 0;
};

// The Key ID and suite an object names, and the Immutable Properties bytes they came in (the
// AAD takes those bytes exactly as received).
struct KeyRef {
  uint64_t key_id = 0;
  CipherSuite suite = CipherSuite::kAes128GcmSha256;
  ByteSpan immutable;  // into the properties passed to ParseKeyRef
};

Bytes BuildAad(const ObjectPosition& pos, ByteSpan immutable);

// The Immutable Properties value for (suite, key_id): a draft-22 KVP list of the Key ID (and the
// suite unless it is 0x0004).
Bytes EncodeImmutable(CipherSuite suite, uint64_t key_id);
// The object's properties carrying them: {0x0B: EncodeImmutable(...)}.
moqt::Properties ProtectedProperties(CipherSuite suite, uint64_t key_id);
// Finds the Key ID (and suite) in an object's properties (null: none). kNoKeyId when there is no
// 0x0B property or no Key ID in it; kMalformedKeyId when 0x0B does not parse, a Key ID or suite
// repeats; kUnsupportedSuite for a suite we do not implement.
Result<KeyRef> ParseKeyRef(const moqt::Properties* properties);

// pt = vi64(len) ‖ payload. kTooLarge above kMaxPlaintextBytes.
Result<Bytes> EncodePlaintext(ByteSpan payload);
// The payload inside pt; kMalformedPlaintext unless pt is vi64(len) ‖ payload and then nothing
// or exactly one EPL.
Result<ByteSpan> DecodePlaintext(ByteSpan pt);

// Seals a payload for `pos` under `key` / `salt` with `immutable` (EncodeImmutable's bytes).
Result<Bytes> SealPayload(AeadKey& key, const Nonce& salt, const ObjectPosition& pos,
                          ByteSpan immutable, ByteSpan payload);
// The decrypted pt and where the payload lies in it (no copy of the payload).
struct OpenedPayload {
  Bytes plaintext;
  size_t offset = 0, size = 0;
  ByteSpan payload() const { return ByteSpan(plaintext).subspan(offset, size); }
};
// Opens ct ‖ tag: the payload, or kObjectIdTooLarge, kTooShort, kTooLarge, kAuthFailed,
// kMalformedPlaintext. Nothing is returned unless the tag verified.
Result<OpenedPayload> OpenPayload(AeadKey& key, const Nonce& salt, const ObjectPosition& pos,
                                  ByteSpan immutable, ByteSpan ciphertext);

}  // namespace kvcs::secure

#endif  // KVCS_SECURE_OBJECTS_SECURE_OBJECT_H_
