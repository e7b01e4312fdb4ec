// Publisher: the KVCS Original Publisher (profile §3). It takes a KV cache layer by layer, as an
// engine computes it, and publishes it into a moqt::TrackStore, from which MoqtSessions (a
// MoqtServer serving subscribers itself, or later a relay) deliver it:
//   - the five-field namespace of the tokens of segment 0, with a fresh random Publication ID;
//   - per segment s and offered Encoding, the data tracks "k.<codec>.s<s>" + "v.<codec>.s<s>" or
//     "kv.<codec>.s<s>": Group = layer, Object = block of the segment, each a 68-byte KVO1 header
//     with the Data Digest followed by Data; subgroup 0, ascending; End of Group after each layer,
//     End of Track after the last layer; Publisher Priority floor(128·g/L) on every object;
//   - the manifest track ("manifest.cose" signed with the producer key when one is given, else
//     "manifest"), Publisher Priority 0: a new version (Object 0 of a new Group) when a segment is
//     added, after every `manifest_every_layers` completed layers, and when a segment completes,
//     each with object_digests of every completed layer and block_keys_sha256;
//   - segments: tokens appended later (or each pass of a chunked prefill) as a new segment once the
//     previous one completed.
// The namespace's Anchor Key is the Block Key of segment 0's last block. Only full blocks are
// published: every segment's token count must be a multiple of block_tokens.
//
// Protocol logic only: no sockets, no clock. THREADING: like the TrackStore, single-threaded
// (call it on the thread that runs the sessions serving the store).
#ifndef KVCS_KVCS_STREAM_PUBLISHER_H_
#define KVCS_KVCS_STREAM_PUBLISHER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "kvcs_stream/cache_identity.h"
#include "kvcs_stream/encoding.h"
#include "kvcs_stream/object_protection.h"
#include "kvsp/block_keys.h"
#include "kvsp/descriptor.h"
#include "kvsp/ids.h"
#include "moqt_session/moqt_track_store.h"
#include "profile/cose.h"
#include "profile/manifest.h"
#include "profile/namespace.h"

namespace kvcs::stream {

// §3.6: "at least every eight completed layers".
inline constexpr uint32_t kMaxManifestInterval = 8;
// Manifest versions a track keeps: every version of the production while they fit in this many
// bytes. A joiner needs only the newest (fill Relative Start 1), but a relay pulls the whole track
// (fill from group 0): were versions evicted while its fill stream still had them to send, that
// stream would be reset and the relay would fail the track for every consumer. That happened with
// 8 versions kept once production outran the fill (a 4K cache, a version per layer, 0.5 MB
// each, on a busy thread). The bound keeps the quadratic sum of a long production's versions in
// check (a version per layer at 64K context: ~290 MB in all, the oldest evicted first).
inline constexpr uint64_t kManifestBytesKept = uint64_t{256} << 20;

struct PublisherConfig {
  kvsp::Descriptor descriptor;
  kvsp::ScopeKey scope_key{};
  std::vector<Encoding> encodings = {Encoding{}};   // every segment is offered in each
  std::optional<profile::SigningKey> producer_key;  // set: "manifest.cose"; else "manifest"
  bool deterministic = false;
  uint32_t manifest_every_layers = kMaxManifestInterval;  // 1..8
  std::optional<profile::PubId> pub_id;                   // default: profile::NewPubId()
  uint64_t max_track_bytes = moqt::kDefaultMaxBytesPerTrack;
  // Set: every data object and every manifest version is a secure object (a signed manifest is
  // signed, then encrypted). docs/protocols/secure-objects.md.
  std::optional<ObjectEncryption> encryption;
};

class Publisher {
 public:
  // Creates the publication and segment 0 for `tokens` (>= 1 block, a multiple of block_tokens),
  // its tracks in `store` (not owned; must outlive the Publisher) and manifest version 0.
  static Result<std::unique_ptr<Publisher>> Create(moqt::TrackStore* store, PublisherConfig config,
                                                   std::span<const uint32_t> tokens);

  const profile::Namespace& ns() const { return ns_; }
  moqt::TrackNamespace track_namespace() const { return ToMoqtNamespace(ns_); }
  const PublisherConfig& config() const { return config_; }
  uint32_t segment() const { return static_cast<uint32_t>(segments_.size() - 1); }
  uint64_t segment_blocks() const { return manifest_.segments.back().blocks; }
  uint32_t next_layer() const { return next_layer_; }
  bool segment_complete() const { return manifest_.segments.back().complete; }
  uint64_t manifest_versions() const { return manifest_group_; }
  const profile::Manifest& manifest() const { return manifest_; }
  // Every track of the publication so far: the manifest, then each segment's data tracks. A
  // publisher connected to a relay PUBLISHes them all after PUBLISH_NAMESPACE
  // (moqt::PublishSet), and again after AddSegment, so the relay holds the publication even if
  // nobody subscribes before this publisher leaves.
  std::vector<moqt::FullTrackName> track_names() const;

  // Publishes one block of the current segment: `block` (0-based within the segment) of `layer`
  // with its raw K and V sections (descriptor shapes). REQUIRES layer == next_layer() and blocks
  // in ascending order from 0. The last block of a layer ends the layer (End of Group, manifest
  // when due); the last layer ends the segment's tracks (End of Track, manifest).
  Status PublishBlock(uint32_t layer, uint64_t block, ByteSpan raw_k, ByteSpan raw_v);
  // The whole layer of the current segment: raw [T][H][D] K and V for the segment's T tokens.
  // One synchronous call on the store's thread (encoding and hashing the whole layer; figures in
  // docs/protocols/kvcs-stream.md, Bench); when that thread also serves the tracks, none of the
  // layer is sent until it returns. A producer that wants a layer's objects to leave while it is
  // published calls PublishBlock per block, returning to its event loop between blocks
  // (kvcs_stream_bench).
  Status PublishLayer(uint32_t layer, ByteSpan k, ByteSpan v);

  // Adds the next segment for `tokens` appended after every earlier segment's (a multiple of
  // block_tokens). REQUIRES the current segment complete. Publishes a manifest version.
  Status AddSegment(std::span<const uint32_t> tokens);

  // The publication is final: ends the manifest track (End of Track after the last version), so
  // a relay keeps the whole publication after this publisher leaves and late consumers still get
  // the last version (their manifest fill starts one group below the track's end). Call before
  // disconnecting; nothing can be published after it. kPublicationEnded when called twice.
  Status Close();
  bool closed() const { return manifest_track_ && manifest_track_->ended(); }

  // Encryption only: seals the objects published from now on under `key_id` (scope key rotation;
  // consumers need that epoch's secret). `secret` empty: a Key ID the keyring already holds.
  Status RotateKey(uint64_t key_id, ByteSpan secret = {});
  std::optional<uint64_t> key_id() const {
    return sealer_ ? std::optional<uint64_t>(sealer_->key_id()) : std::nullopt;
  }

 private:
  struct SegmentTracks {
    std::vector<profile::TrackName> names;  // per encoding, its 1 or 2 tracks (flattened)
    std::vector<std::shared_ptr<moqt::Track>> tracks;
    std::vector<Encoding> encoding_of;  // per track
  };
  Publisher(moqt::TrackStore* store, PublisherConfig config);
  Status StartSegment(std::span<const uint32_t> tokens);
  Status EndLayer();
  Status PublishManifest();
  // The payload and properties of a Normal object at `pos` of `track` (sealed when encrypting).
  Status Protect(const moqt::Track& track, const secure::ObjectPosition& pos, Bytes* payload,
                 moqt::Properties* properties);

  moqt::TrackStore* store_;
  PublisherConfig config_;
  Digest compat_id_{};
  kvsp::BlockKeyChain chain_;
  profile::Namespace ns_;
  std::shared_ptr<moqt::Track> manifest_track_;
  profile::Manifest manifest_;
  std::vector<SegmentTracks> segments_;
  uint32_t next_layer_ = 0;
  uint64_t next_block_ = 0;
  // Data Digests of the layer being published, per track of the segment.
  std::vector<std::vector<Digest>> layer_digests_;
  uint32_t layers_since_manifest_ = 0;
  uint64_t manifest_group_ = 0;  // the next manifest version's Group ID
  std::optional<secure::ObjectSealer> sealer_;
};

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_PUBLISHER_H_
