// Fuzzes what a hostile relay controls of a secure object: the Immutable Properties bytes, the
// Group and Object IDs, the priority and the payload, fed to ObjectOpener::Open (and the
// plaintext framing to DecodePlaintext). Input: u8 immutable length, that many bytes, u64 group,
// u64 object, u8 priority, u8 track selector, then the payload. Invariants: no crash or sanitizer
// report; a forgery never opens (Open succeeds only for inputs this target sealed itself, which
// are checked to round-trip exactly).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "secure_objects/secure_object.h"
#include "secure_objects/track_crypto.h"

namespace {

using kvcs::Bytes;
using kvcs::ByteSpan;
namespace secure = kvcs::secure;

uint64_t U64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
  return v;
}

secure::ScopeKeyring Keys() {
  secure::ScopeKeyring k;
  (void)k.Add(0, Bytes(32, 0x11));
  (void)k.Add(7, Bytes(32, 0x22));
  return k;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static secure::ObjectOpener* opener = new secure::ObjectOpener(Keys());
  static secure::ObjectSealer* sealer =
      new secure::ObjectSealer(Keys(), secure::CipherSuite::kAes256GcmSha512, 7);
  if (size < 1) return 0;
  const size_t imm_len = data[0];
  if (size < 1 + imm_len + 18) return 0;
  const uint8_t* p = data + 1;
  std::string imm(reinterpret_cast<const char*>(p), imm_len);
  p += imm_len;
  secure::ObjectPosition pos{U64(p), U64(p + 8), p[16]};
  const uint8_t track = p[17];
  p += 18;
  ByteSpan payload(p, size - static_cast<size_t>(p - data));
  kvcs::moqt::FullTrackName ftn{{"kvcs-1", "s", "c", "a", std::string(1, char(track & 3))},
                                (track & 4) ? "manifest" : "k.raw.s0"};
  kvcs::moqt::Properties props = {kvcs::moqt::KeyValuePair::Blob(0x0B, imm)};
  auto opened = opener->Open(ftn, pos, &props, payload);
  if (opened.ok()) std::abort();  // a forgery: nobody but this target holds the keys
  (void)secure::DecodePlaintext(payload);
  (void)secure::ParseKeyRef(&props);
  // Round trip of the same bytes as a payload.
  if (pos.object <= secure::kMaxObjectId) {
    auto sealed = sealer->Seal(ftn, pos, payload);
    if (!sealed.ok()) std::abort();
    auto back = opener->Open(ftn, pos, &sealed->properties, sealed->payload);
    if (!back.ok() || back->size != payload.size() ||
        !std::equal(payload.begin(), payload.end(), back->payload().begin())) {
      std::abort();
    }
  }
  return 0;
}
