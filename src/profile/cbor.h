// A small strict CBOR (RFC 8949) encoder and decoder for exactly what COSE_Sign1 (RFC 9052)
// needs: unsigned and negative integers, byte strings, text strings, arrays and maps (with
// integer or text keys). Tags are handled by the COSE layer (only tag 18, only outermost).
//
// The decoder is a parser of network input. It accepts only definite lengths and preferred
// (shortest) integer/length encodings, valid UTF-8 text, map keys that are integers or text,
// without duplicates; it rejects floats, simple values, tags, indefinite lengths, reserved
// additional-information values, nesting deeper than the caller's bound, any length larger than
// the bytes that remain, and trailing bytes. Every failure is a Status with a CborError detail
// (values 1..99; COSE errors use 100+ so the two never collide).
//
// Decoded strings are views into the input buffer: a Value is valid as long as that buffer is.
// Pure functions; thread-safe.
#ifndef KVCS_PROFILE_CBOR_H_
#define KVCS_PROFILE_CBOR_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"

namespace kvcs::profile::cbor {

enum class CborError {
  kNone = 0,
  kTruncated = 1,     // input ends inside an item, or a length exceeds the remaining bytes
  kTrailingBytes,     // bytes after the single top-level item
  kUnsupportedType,   // float, simple value, or a tag where none is allowed
  kIndefiniteLength,  // additional information 31
  kReservedInfo,      // additional information 28..30
  kNonMinimal,        // an integer or length not in its shortest form
  kTooDeep,           // nesting beyond the caller's bound
  kBadUtf8,           // a text string that is not valid UTF-8
  kBadMapKey,         // a map key that is not an integer or text
  kDuplicateKey,      // a map key that appears twice
  kTooManyEntries,    // a map with more than kMaxMapEntries entries
};
std::string_view CborErrorName(CborError e);

// COSE header maps hold a handful of labels; the bound keeps duplicate-key detection (quadratic in
// the entry count) cheap on hostile input.
inline constexpr size_t kMaxMapEntries = 64;

enum class Type : uint8_t { kUint, kNegInt, kBytes, kText, kArray, kMap };

struct Value {
  Type type = Type::kUint;
  // kUint: the value. kNegInt: n, for the integer -1 - n.
  uint64_t number = 0;
  // kBytes / kText: a view into the decoded input.
  ByteSpan str;
  std::vector<Value> items;  // kArray
  // kMap, in encoded order: keys[i] maps to values[i]. (Two vectors rather than pairs, because
  // std::pair cannot hold the still-incomplete Value.)
  std::vector<Value> keys, values;

  // The integer as int64 if it is an integer in range.
  std::optional<int64_t> AsInt() const;
  std::string_view text() const { return AsStringView(str); }
  // The value of the map entry whose key is the integer `label` (nullptr if none or not a map).
  const Value* Find(int64_t label) const;
};

// Decodes exactly one item spanning all of `in`, with at most `max_depth` nested arrays/maps
// (an item at top level has depth 1 if it is an array or map).
Result<Value> Decode(ByteSpan in, size_t max_depth);

// Encoder: appends preferred-form items to `out`.
void PutUint(Bytes* out, uint64_t v);
void PutInt(Bytes* out, int64_t v);
void PutBytes(Bytes* out, ByteSpan b);
void PutText(Bytes* out, std::string_view s);
void PutArrayHeader(Bytes* out, uint64_t count);
void PutMapHeader(Bytes* out, uint64_t count);
void PutTag(Bytes* out, uint64_t tag);

}  // namespace kvcs::profile::cbor

#endif  // KVCS_PROFILE_CBOR_H_
