// The KVCS manifest (KVCS profile §3.6): the JSON object that describes one publication, as a
// typed model with a strict parser and a deterministic serializer. The byte-level spec, every
// check and every choice made where the profile is silent are in docs/formats/kvcs-manifest.md.
//
// ParseManifest bounds its input (size, nesting depth), rejects duplicate keys, unknown fields,
// wrong types, non-lowercase or wrong-length hex, and validates the whole document (segments
// numbered 0..n-1 and contiguous, track names valid and of their segment, layers/block_tokens
// equal to the descriptor's, object_digests shaped by layers and blocks). It does NOT check the
// namespace: a consumer MUST also call CheckManifestNamespace (compat_id consistency).
//
// Value types; all functions are pure and thread-safe.
#ifndef KVCS_PROFILE_MANIFEST_H_
#define KVCS_PROFILE_MANIFEST_H_

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/status.h"
#include "kvsp/descriptor.h"
#include "profile/namespace.h"
#include "profile/object.h"
#include "profile/track_name.h"

namespace kvcs::profile {

inline constexpr int kManifestVersion = 1;  // the "kvcs" member
// A manifest with every object digest of a 128K-token context (8192 blocks of 16) over 32 layers
// and 3 tracks is ~53 MB of hex; 64 MiB admits that and bounds what a peer can make us parse.
inline constexpr size_t kMaxManifestBytes = 64u << 20;
// The deepest valid manifest nests 6 levels (root, segments, segment, object_digests, track,
// group); anything much deeper is hostile. Checked on the text before a DOM is built, so
// "[[[[..." cannot make the parser allocate a node per byte.
inline constexpr size_t kMaxManifestJsonDepth = 16;
// Segments are prefill passes (chunks); 4096 chunks of 256 tokens is a 1M-token context.
inline constexpr size_t kMaxSegments = 4096;
// Total blocks over all segments: 2^22 blocks of 16 tokens is 64M tokens, far beyond any context
// window; it also keeps (first_block + blocks) * block_tokens far below 2^64.
inline constexpr uint64_t kMaxManifestBlocks = uint64_t{1} << 22;
// k, v and kv in a few encodings each; more tracks per segment serve no consumer.
inline constexpr size_t kMaxTracksPerSegment = 16;

struct ManifestSegment {
  uint32_t segment = 0;
  uint64_t first_block = 0;  // absolute index of the segment's first block
  uint64_t blocks = 0;       // number of blocks (Objects per Group) in the segment
  Digest block_keys_sha256{};
  std::vector<TrackName> tracks;  // data tracks of this segment
  bool complete = false;
  // Optional (SHOULD): per data track name, one entry per completed Group (layer) in Group order,
  // each the Data Digests of the Group's Objects in Object order.
  std::optional<std::map<std::string, std::vector<std::vector<Digest>>>> object_digests;

  bool operator==(const ManifestSegment&) const = default;
};

struct Manifest {
  kvsp::Descriptor compat;
  uint32_t layers = 0;        // == compat.layers
  uint32_t block_tokens = 0;  // == compat.block_tokens
  bool deterministic = false;
  std::vector<ManifestSegment> segments;

  bool operator==(const Manifest&) const = default;
};

enum class ManifestError {
  kNone = 0,
  kTooLarge = 1,          // more than kMaxManifestBytes
  kTooDeep,               // nesting above kMaxManifestJsonDepth
  kSyntax,                // not JSON (or not UTF-8)
  kDuplicateKey,          // a member name appears twice in one object
  kNotObject,             // the root (or a segment, or object_digests) is not an object
  kUnknownField,          // a member the profile does not define
  kMissingField,          // a required member is absent
  kWrongType,             // e.g. a string where an integer is required, a float, a null
  kOutOfRange,            // a negative integer or one above its bound
  kUnsupportedVersion,    // "kvcs" is not 1
  kBadCompat,             // "compat" is not a valid KVSP Compatibility Descriptor
  kLayersMismatch,        // "layers" != compat.layers
  kBlockTokensMismatch,   // "block_tokens" != compat.block_tokens
  kNoSegments,            // an empty "segments" array
  kTooManySegments,       // more than kMaxSegments
  kSegmentNumber,         // segments[i].segment != i
  kNotContiguous,         // first_block != previous first_block + blocks (or != 0 for the first)
  kZeroBlocks,            // a segment with "blocks": 0
  kTooManyBlocks,         // total blocks above kMaxManifestBlocks
  kBadHex,                // not 64 lowercase hex characters
  kNoTracks,              // an empty "tracks" array
  kTooManyTracks,         // more than kMaxTracksPerSegment
  kBadTrackName,          // not a data track name per §3.2
  kTrackSegmentMismatch,  // a track of another segment listed in this one
  kDuplicateTrack,        // the same track listed twice
  kUnknownCodec,          // a track whose codec is not in the KVSP registry
  kUnlistedTrack,         // object_digests for a track not in "tracks"
  kTooManyGroups,         // more object_digests groups than layers
  kMissingGroups,         // a complete segment whose object_digests lack a layer
  kWrongDigestCount,      // a group with a digest count != blocks
  kCompatIdMismatch,      // CompatId(compat) != the namespace's compat_id
  kNotInManifest,         // ExpectationFor: the track/group/object is not described
  kListedDigestMismatch,  // VerifyObject: the object's Data Digest differs from object_digests
};
std::string_view ManifestErrorName(ManifestError e);

// Strict parse + validation of manifest JSON text. Errors: kInvalidArgument (kResourceExhausted
// for kTooLarge/kTooDeep/kTooMany*) with a ManifestError detail. The one-pass reader
// (manifest_one_pass.h) decides what it accepts; everything else goes to the reference.
Result<Manifest> ParseManifest(std::string_view json);
// The reference: the text to an nlohmann DOM (ParseStrictJsonText), then ManifestFromJson. It
// defines the accepted set and the errors; ParseManifest equals it (fuzz/profile checks that).
Result<Manifest> ParseManifestReference(std::string_view json);
// The text-level part of the reference: size (kTooLarge), nesting (kTooDeep, above max_depth,
// counted on the text before a DOM is built), syntax incl. UTF-8 (kSyntax), duplicate member
// names in any object (kDuplicateKey).
Result<nlohmann::json> ParseStrictJsonText(std::string_view text, size_t max_depth);
// The same checks on an already-parsed value (duplicate keys are no longer visible there).
Result<Manifest> ManifestFromJson(const nlohmann::json& j);
// Validation of a manifest built in code (everything ParseManifest checks after typing).
Status ValidateManifest(const Manifest& m);
// Deterministic compact JSON (members sorted by name, no whitespace). Errors: as ValidateManifest.
// Written in one pass (manifest_writer.cc): the publisher writes a version after every few layers
// and each re-lists every object digest (~17 MB at 64K tokens), which through a DOM cost ~10x the
// hex itself (bench/profile: manifest_parse_bench).
Result<std::string> ManifestToJson(const Manifest& m);
// The reference: the same text through an nlohmann DOM. ManifestToJson equals it byte for byte
// (tests and fuzz/profile check that).
Result<std::string> ManifestToJsonReference(const Manifest& m);

// §3.6: the manifest MUST be consistent with the namespace: CompatId(m.compat) == ns.compat_id.
// Errors: kCorruption with ManifestError::kCompatIdMismatch.
Status CheckManifestNamespace(const Manifest& m, const Namespace& ns);

// SHA-256 of the concatenated raw Block Keys of a segment ("block_keys_sha256").
Digest BlockKeysSha256(std::span<const Digest> block_keys);

// The expectation to verify Object `object_id` of Group `group_id` of data track `track` with
// DecodeObject: location, component, codec value, block_tokens and token_start =
// (first_block + object_id) · block_tokens. Errors: kNotFound with kNotInManifest when the track
// is not listed, the group is not a layer or the object is not a block of the segment.
Result<ObjectExpectation> ExpectationFor(const Manifest& m, const TrackName& track,
                                         uint64_t group_id, uint64_t object_id);
// The Data Digest the manifest lists for that object, if it lists one.
std::optional<Digest> ListedDigest(const Manifest& m, const TrackName& track, uint64_t group_id,
                                   uint64_t object_id);

// The whole §5.4 check of one received Object: DecodeObject with ExpectationFor(...), then, when
// the manifest lists a digest for the object, equality with it (else kCorruption with
// kListedDigestMismatch). The view's data points into `payload`.
Result<ObjectView> VerifyObject(const Manifest& m, const TrackName& track, uint64_t group_id,
                                uint64_t object_id, ByteSpan payload);
// The manifest's part of VerifyObject for an object whose header DecodeObject (or
// DecodeObjectWithDigest) already verified against its Data: ExpectationFor's fields (token start,
// component, codec, token count) and the listed digest. No hashing: a receiver that verified an
// object on arrival does not hash it again when the manifest listing it comes.
Status CheckVerifiedObject(const Manifest& m, const TrackName& track, uint64_t group_id,
                           uint64_t object_id, const ObjectHeader& header);

}  // namespace kvcs::profile

#endif  // KVCS_PROFILE_MANIFEST_H_
