#include "secure_objects/secure_object.h"

#include <string>

#include "moqt/moqt_key_value.h"
#include "moqt/moqt_varint.h"
#include "moqt/moqt_wire_io.h"
#include "secure_objects/secure_object_error.h"

namespace kvcs::secure {
namespace {

constexpr uint64_t kImmutableType = static_cast<uint64_t>(moqt::PropertyType::kImmutableProperties);

Status Malformed(SecureObjectError e, std::string m) {
  return SecureStatus(Code::kInvalidArgument, e, std::move(m));
}

}  // namespace

Bytes BuildAad(const ObjectPosition& pos, ByteSpan immutable) {
  Bytes aad;
  aad.reserve(13 + immutable.size());
  for (int i = 7; i >= 0; --i) aad.push_back(static_cast<uint8_t>(pos.group >> (8 * i)));
  for (int i = 3; i >= 0; --i) aad.push_back(static_cast<uint8_t>(pos.object >> (8 * i)));
  aad.push_back(pos.publisher_priority);
  aad.insert(aad.end(), immutable.begin(), immutable.end());
  return aad;
}

Bytes EncodeImmutable(CipherSuite suite, uint64_t key_id) {
  std::vector<moqt::KeyValuePair> list = {moqt::KeyValuePair::Int(kKeyIdPropertyType, key_id)};
  if (suite != CipherSuite::kAes128GcmSha256) {
    list.push_back(moqt::KeyValuePair::Int(kSuitePropertyType, static_cast<uint16_t>(suite)));
  }
  Bytes out;
  moqt::WireWriter w(&out);
  (void)moqt::WriteKvpList(w, list);  // two even types, ascending: always valid
  return out;
}

moqt::Properties ProtectedProperties(CipherSuite suite, uint64_t key_id) {
  Bytes imm = EncodeImmutable(suite, key_id);
  return {moqt::KeyValuePair::Blob(kImmutableType, std::string(imm.begin(), imm.end()))};
}

Result<KeyRef> ParseKeyRef(const moqt::Properties* properties) {
  const moqt::KeyValuePair* imm = nullptr;
  if (properties != nullptr) {
    for (const moqt::KeyValuePair& p : *properties) {
      if (p.type != kImmutableType) continue;
      if (imm != nullptr) {
        return Malformed(SecureObjectError::kMalformedKeyId, "Immutable Properties repeat");
      }
      imm = &p;
    }
  }
  if (imm == nullptr) {
    return SecureStatus(Code::kNotFound, SecureObjectError::kNoKeyId,
                        "the object has no Immutable Properties (not protected)");
  }
  KeyRef ref;
  ref.immutable = AsBytes(imm->bytes);
  std::vector<moqt::KeyValuePair> list;
  Status s = moqt::ParseKvpList(ref.immutable, &list);
  if (!s.ok()) {
    return Malformed(SecureObjectError::kMalformedKeyId,
                     "Immutable Properties do not parse: " + s.message());
  }
  bool have_key = false, have_suite = false;
  for (const moqt::KeyValuePair& p : list) {
    if (p.type == kKeyIdPropertyType) {
      if (have_key) return Malformed(SecureObjectError::kMalformedKeyId, "the Key ID repeats");
      have_key = true;
      ref.key_id = p.value;
    } else if (p.type == kSuitePropertyType) {
      if (have_suite) return Malformed(SecureObjectError::kMalformedKeyId, "the suite repeats");
      have_suite = true;
      if (p.value > 0xFFFF) {
        return SecureStatus(Code::kUnsupported, SecureObjectError::kUnsupportedSuite,
                            "cipher suite " + std::to_string(p.value));
      }
      KVCS_ASSIGN_OR_RETURN(SuiteParams sp, LookupSuite(static_cast<uint16_t>(p.value)));
      ref.suite = sp.suite;
    }
  }
  if (!have_key) {
    return SecureStatus(Code::kNotFound, SecureObjectError::kNoKeyId,
                        "the Immutable Properties hold no Key ID");
  }
  return ref;
}

Result<Bytes> EncodePlaintext(ByteSpan payload) {
  if (payload.size() > kMaxPlaintextBytes) {
    return SecureStatus(Code::kResourceExhausted, SecureObjectError::kTooLarge,
                        "payload of " + std::to_string(payload.size()) + " bytes");
  }
  Bytes pt;
  pt.reserve(moqt::VarintLength(payload.size()) + payload.size());
  moqt::AppendVarint(&pt, payload.size());
  pt.insert(pt.end(), payload.begin(), payload.end());
  return pt;
}

Result<ByteSpan> DecodePlaintext(ByteSpan pt) {
  moqt::WireReader r(pt);
  uint64_t len = 0;
  ByteSpan payload;
  if (!r.Varint(&len) || len > r.remaining() || !r.Span(static_cast<size_t>(len), &payload)) {
    return Malformed(SecureObjectError::kMalformedPlaintext,
                     "the payload length runs past the plaintext");
  }
  if (r.empty()) return payload;
  uint16_t type = 0;
  uint64_t epl_len = 0;
  if (!r.U16(&type) || type != kEncryptedPropertiesType || !r.Varint(&epl_len) ||
      epl_len != r.remaining()) {
    return Malformed(SecureObjectError::kMalformedPlaintext,
                     "bytes after the payload are not one Encrypted Properties List");
  }
  return payload;
}

Result<Bytes> SealPayload(AeadKey& key, const Nonce& salt, const ObjectPosition& pos,
                          ByteSpan immutable, ByteSpan payload) {
  KVCS_ASSIGN_OR_RETURN(Nonce nonce, MakeNonce(salt, pos.group, pos.object));
  if (payload.size() > kMaxPlaintextBytes) {
    return SecureStatus(Code::kResourceExhausted, SecureObjectError::kTooLarge,
                        "payload of " + std::to_string(payload.size()) + " bytes");
  }
  // pt = vi64(len) ‖ payload, encrypted in two parts so the payload is not copied first.
  Bytes len;
  moqt::AppendVarint(&len, payload.size());
  Bytes out;
  out.reserve(len.size() + payload.size() + kTagBytes);
  KVCS_RETURN_IF_ERROR(key.Seal(nonce, BuildAad(pos, immutable), {len, payload}, &out));
  return out;
}

Result<OpenedPayload> OpenPayload(AeadKey& key, const Nonce& salt, const ObjectPosition& pos,
                                  ByteSpan immutable, ByteSpan ciphertext) {
  KVCS_ASSIGN_OR_RETURN(Nonce nonce, MakeNonce(salt, pos.group, pos.object));
  if (ciphertext.size() > kMaxCiphertextBytes) {
    return SecureStatus(Code::kResourceExhausted, SecureObjectError::kTooLarge,
                        "ciphertext of " + std::to_string(ciphertext.size()) + " bytes");
  }
  OpenedPayload out;
  KVCS_RETURN_IF_ERROR(key.Open(nonce, BuildAad(pos, immutable), ciphertext, &out.plaintext));
  KVCS_ASSIGN_OR_RETURN(ByteSpan payload, DecodePlaintext(out.plaintext));
  out.offset = static_cast<size_t>(payload.data() - out.plaintext.data());
  out.size = payload.size();
  return out;
}

}  // namespace kvcs::secure
