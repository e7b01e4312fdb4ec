// LayerVerifier: the consumer's §5.4 core, pure (no session, no clock). It takes the manifest
// versions and the data objects of ONE publication as a peer delivers them, in any order,
// verifies each, and hands a layer of a segment to the caller only when every needed object of
// that layer in every selected track is verified.
//
// Verification order:
//   manifest: signed ("manifest.cose": COSE_Sign1 by kid against the keyring) or, only when
//     signatures are not required, "manifest"; strict parse; CompatId(compat) == the namespace's
//     compat_id; compat == the caller's descriptor (so layers, block size, dtype agree); segment 0
//     ends at the namespace's Anchor Key and every segment the caller's Block Keys cover has their
//     block_keys_sha256; a later version only extends the earlier one. Any failure refuses the
//     whole publication (sticky): nothing more from it is handed to the caller.
//   object: its track belongs to this publication (else kForeignPublication: never mix
//     publications); right away every §3.5 check that needs no manifest (magic, version, layer ==
//     group, block == object, lengths, Data Digest, component/codec of the track, token count:
//     the Data is hashed once, here or by the caller); once a manifest describes it,
//     profile::CheckVerifiedObject on the kept header (token start, listed digest; no rehash).
//     Objects wait (bounded by max_buffered_bytes) until a manifest lists their layer's digests; a
//     segment that the manifest marks complete without digests for the track is verified by §3.5
//     alone. A failed object is discarded and treated as missing.
// Delivery: spans over verified bytes (decoded to the descriptor's dtype for non-raw codecs),
// valid during the callback only; the layer's buffers are released right after it. At the end
// of a retrieval, DeliverVerifiedBlocks hands over the verified blocks of layers that never
// completed (a corrupt or missing object then costs its block, not its layer).
//
// Bounds: buffered bytes (max_buffered_bytes), refusals kept (kMaxRefusalsKept); every index from
// the peer is checked against the manifest or the caller's needs before anything is stored.
// THREADING: single-threaded.
#ifndef KVCS_KVCS_STREAM_LAYER_VERIFIER_H_
#define KVCS_KVCS_STREAM_LAYER_VERIFIER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "kvcs_stream/cache_identity.h"
#include "kvcs_stream/encoding.h"
#include "kvcs_stream/retrieval_report.h"
#include "moqt/moqt_messages.h"
#include "profile/cose.h"
#include "profile/manifest.h"
#include "profile/namespace.h"
#include "profile/track_name.h"

namespace kvcs::stream {

// Unverified plus verified-but-undelivered object bytes a verifier holds by default.
inline constexpr uint64_t kDefaultMaxBufferedBytes = uint64_t{1} << 30;

struct VerifierConfig {
  CacheIdentity identity;                 // the caller's descriptor, ids and Block Keys
  profile::Namespace publication;         // the one publication this verifier accepts
  const profile::KeySet* keys = nullptr;  // producer keys of the scope (not owned)
  bool require_signature = true;
  Encoding encoding;  // the selected tracks: k+v of a codec, or one kv track
  uint32_t first_layer = 0;
  std::optional<uint32_t> last_layer;  // default: the last layer
  std::optional<uint64_t> max_blocks;  // only the first n blocks of the prompt
  // Accept a segment that extends beyond the caller's Block Keys (so its block_keys_sha256
  // cannot be checked): the caller learned from elsewhere (a KVSP Index Service lookup of its own
  // keys) that the publication's first blocks are its blocks.
  bool accept_unconfirmed_prefix = false;
  uint64_t max_buffered_bytes = kDefaultMaxBufferedBytes;
};

// One verified layer of one segment.
struct VerifiedLayer {
  uint32_t segment = 0;
  uint32_t layer = 0;
  uint64_t first_block = 0;    // absolute index of k[0] / v[0]
  std::vector<ByteSpan> k, v;  // raw sections, one per needed block (v empty for MLA)
};
using LayerCallback = std::function<void(const VerifiedLayer&)>;

// A segment the caller needs, as the current manifest describes it.
struct NeededSegment {
  uint32_t segment = 0;
  uint64_t first_block = 0;
  uint64_t objects = 0;                    // Object IDs 0..objects-1 are needed
  std::vector<profile::TrackName> tracks;  // the selected encoding's tracks
  bool complete = false;
};

class LayerVerifier {
 public:
  LayerVerifier(VerifierConfig config, LayerCallback on_layer);

  // A manifest version from track `kind`. Errors (sticky refusal of the publication):
  // kUnsignedManifest, kUnknownKid, kBadSignature, kManifestInvalid, kCompatMismatch,
  // kDescriptorMismatch, kBlockKeysMismatch, kManifestConflict; kPublicationRefused afterwards.
  Status OnManifest(profile::TrackKind kind, ByteSpan payload, uint64_t group = 0);
  // A Normal data object. OK also when it is not needed (counted as discarded) or a duplicate.
  // Errors: kForeignPublication, kObjectInvalid, kListedDigestMismatch, kUndecodable,
  // kBufferFull, kPublicationRefused.
  // The payload is copied when kept; its Data is hashed here.
  Status OnObject(const moqt::FullTrackName& track, moqt::Location loc, ByteSpan payload);
  // The same with the payload handed over (kept without a copy) and the SHA-256 of its Data
  // (payload[68..]) computed by the caller, e.g. on another thread: no hashing here.
  Status OnObject(const moqt::FullTrackName& track, moqt::Location loc, Bytes payload,
                  const Digest& data_sha256);

  // Selects the tracks to verify (the codec choice, once the manifest shows what is offered).
  // Errors: kFailedPrecondition (kBadArgument) once an object arrived.
  Status SetEncoding(const Encoding& e);
  const Encoding& encoding() const { return config_.encoding; }

  bool refused() const { return !refusal_.ok(); }
  const Status& refusal() const { return refusal_; }
  const profile::Manifest* manifest() const { return manifest_ ? &*manifest_ : nullptr; }
  uint64_t needed_blocks() const { return needed_blocks_; }
  uint32_t first_layer() const { return config_.first_layer; }
  uint32_t last_layer() const { return last_layer_; }
  // Segments of the current manifest that hold needed blocks and offer the selected encoding.
  std::vector<NeededSegment> NeededSegments() const;
  // Every needed (block, layer) delivered.
  bool AllDelivered() const;
  // For the end of a retrieval: hands over, for every needed layer not delivered whole, each run
  // of consecutive blocks whose objects (in every selected track) verified, one callback per run
  // (first_block says where it starts). Report() then counts those (block, layer) as delivered.
  void DeliverVerifiedBlocks();
  // The manifest marks complete every segment that holds needed blocks (no more digests come).
  bool NeededSegmentsComplete() const;
  uint64_t buffered_bytes() const { return buffered_; }

  // The report so far; `rest` is the reason for every (block, layer) not delivered and not
  // refused for a more specific reason (kMissing, kDeadline).
  RetrievalReport Report(StreamError rest) const;
  // Counters and refusals live in the report under construction.
  RetrievalReport& mutable_report() { return report_; }

 private:
  using Key = std::tuple<uint32_t, uint32_t, uint32_t, uint64_t>;  // segment, track, layer, obj
  struct Entry {
    Bytes payload;
    profile::ObjectHeader header;  // verified against the Data at arrival (hashed once)
    bool verified = false;
  };
  struct SegmentState {
    bool usable = false;
    StreamError why_not = StreamError::kNotCovered;
  };
  Status Refuse(StreamError e, std::string message, const std::string& track, moqt::Location loc,
                const Status& cause = {});
  Status RefuseObject(const Status& s, const std::string& track, moqt::Location loc,
                      const Key& key);
  Status Refused() const;
  // Both OnObject: `owned` (when set) is `payload`'s storage, moved in; `data_sha256` (when set)
  // the Data's digest.
  Status Accept(const moqt::FullTrackName& track, moqt::Location loc, ByteSpan payload,
                Bytes* owned, const Digest* data_sha256);
  Status CheckManifest(const profile::Manifest& m);
  // Which manifest segments are usable with the selected encoding (segments_).
  void UpdateSegments();
  Status CheckAgainstPrevious(const profile::Manifest& m) const;
  // Verifies what the current manifest allows and delivers what became complete.
  Status Progress();
  Status VerifyEntry(const Key& key, Entry& e);
  bool LayerReady(uint32_t segment, uint32_t layer) const;
  Status Deliver(uint32_t segment, uint32_t layer);
  // Blocks [begin, end) of a segment's layer, every object verified, as one VerifiedLayer (spans
  // into entries_ or `decoded`). Errors: an undecodable object (recorded as refused).
  Status Assemble(uint32_t segment, uint32_t layer, uint64_t begin, uint64_t end,
                  VerifiedLayer* out, std::vector<Bytes>* decoded);
  bool BlockVerified(uint32_t segment, uint32_t layer, uint64_t obj) const;
  void Release(uint32_t segment, uint32_t layer, uint64_t begin, uint64_t end);
  uint64_t SegmentObjects(const profile::ManifestSegment& s) const;
  std::optional<int> SelectedIndex(const profile::TrackName& t) const;

  VerifierConfig config_;
  LayerCallback on_layer_;
  uint32_t last_layer_ = 0;
  uint64_t needed_blocks_ = 0;
  std::optional<profile::Manifest> manifest_;
  std::vector<SegmentState> segments_;  // per manifest segment
  std::map<Key, Entry> entries_;
  std::set<Key> seen_;  // every needed object received once (for duplicate counting)
  std::map<Key, StreamError> object_refusals_;
  std::set<std::pair<uint32_t, uint32_t>> delivered_;                    // (segment, layer)
  std::set<std::tuple<uint32_t, uint32_t, uint64_t>> delivered_blocks_;  // (segment, layer, obj)
  uint64_t buffered_ = 0;
  Status refusal_;
  RetrievalReport report_;
};

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_LAYER_VERIFIER_H_
