// The KVSP Compatibility Descriptor (KVSP v1 as defined by the project, shared/specs/kvsp.md §1).
//
// A Descriptor names everything that must match for a KV cache to be reusable: model and weights
// revision, tokenizer, adapter, attention shape, KV dtype, tokens per block and layout. Its
// canonical JSON form is hashed into the compat_id (§2). Parsing is strict: unknown fields,
// duplicate keys, floats, nulls, nested values, missing required fields, bad enum values and
// integers outside their range all fail with a typed DescriptorError detail.
//
// Plain value type; thread-compatible. All functions are pure and thread-safe.
#ifndef KVCS_KVSP_DESCRIPTOR_H_
#define KVCS_KVSP_DESCRIPTOR_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/status.h"

namespace kvcs::kvsp {

// Typed detail of a descriptor Status (Status::Is(DescriptorError::k...)).
enum class DescriptorError {
  kNone = 0,
  kSyntax,              // not JSON at all (or trailing garbage)
  kNotObject,           // the top-level value is not an object
  kTooLarge,            // input longer than kMaxDescriptorJsonBytes or a string too long
  kDuplicateKey,        // the same member appears twice
  kUnknownField,        // a member name not in §1
  kMissingField,        // a required member is absent
  kFloat,               // a number with a fraction or exponent
  kNull,                // a null value
  kNested,              // an object or array value
  kWrongType,           // e.g. a string where an integer is required, or a bool
  kOutOfRange,          // integer outside 0..2^53-1 or outside its field's range
  kZero,                // zero where it makes no sense (layers, kv_heads, head_dim, block_tokens)
  kBadEnum,             // attn, kv_dtype or layout not one of the listed values
  kUnsupportedVersion,  // kvsp != 1
  kEmptyString,         // an empty model, revision or adapter string
  kBadUtf8,             // a string that is not valid UTF-8 (only for code-built descriptors)
  kInconsistent,        // fields disagree (mqa/mla with kv_heads != 1, section too large)
};
std::string_view DescriptorErrorName(DescriptorError e);

// The descriptor version this code implements.
inline constexpr int kDescriptorVersion = 1;
// A descriptor is ~300 bytes; 16 KiB bounds the parser's work on peer input generously.
inline constexpr size_t kMaxDescriptorJsonBytes = 16 * 1024;
// Model names and revisions are short identifiers or digests; 1 KiB is far above any real one.
inline constexpr size_t kMaxDescriptorStringBytes = 1024;
// JSON integers must be exactly representable in an IEEE double (§1: 0 .. 2^53-1).
inline constexpr uint64_t kMaxJsonInteger = (uint64_t{1} << 53) - 1;
// Container headers carry layer numbers as u16 (§5), so a model has at most 65535 KV layers.
inline constexpr uint32_t kMaxLayers = 65535;
// One K section (one block, one layer) is KiB..MiB in practice; 1 GiB bounds every allocation a
// descriptor can make us do (B·H·D·dtype), and keeps the product far from overflow.
inline constexpr uint64_t kMaxSectionBytes = uint64_t{1} << 30;

struct Descriptor {
  int kvsp = 1;
  std::string model, model_rev, tokenizer_rev;
  std::optional<std::string> adapter;
  std::string attn;  // mha | gqa | mqa | mla
  uint32_t layers = 0, kv_heads = 0, head_dim = 0;
  std::string kv_dtype;  // bf16 | fp16 | fp32 | fp8_e4m3 | fp8_e5m2
  uint32_t block_tokens = 0;
  std::string layout;  // thd

  friend bool operator==(const Descriptor&, const Descriptor&) = default;
};

// Parses JSON text strictly (see the file comment); duplicate keys are rejected.
Result<Descriptor> ParseDescriptor(std::string_view json);
// Converts an already-parsed JSON value (duplicate keys are no longer visible here).
Result<Descriptor> DescriptorFromJson(const nlohmann::json& j);
// Checks a descriptor built in code against the same rules as the parser.
Status ValidateDescriptor(const Descriptor& d);

nlohmann::json ToJson(const Descriptor& d);
// §1 canonical form: members sorted by key, no whitespace, only mandatory escapes, plain integers.
// REQUIRES: ValidateDescriptor(d).ok() (strings are valid UTF-8).
std::string CanonicalJson(const Descriptor& d);
// compat_id = SHA-256("kvsp-compat-v1" || 0x00 || canonical(d)).
Digest CompatId(const Descriptor& d);

// Bytes per element of a kv_dtype name; 0 for an unknown name.
size_t DtypeBytes(std::string_view kv_dtype);
// Elements in one K (or V) section: B·H·D.
uint64_t SectionElements(const Descriptor& d);
// Bytes of one raw K section of one layer of one block: B·H·D·dtype.
uint64_t KSectionBytes(const Descriptor& d);
// Bytes of one raw V section: as K, except 0 for MLA (the latent is carried in K only).
uint64_t VSectionBytes(const Descriptor& d);

}  // namespace kvcs::kvsp

#endif  // KVCS_KVSP_DESCRIPTOR_H_
