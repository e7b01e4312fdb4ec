// Retrieval: one consumer retrieval of one publication over a MoqtSession (profile §5.2, §5.3),
// feeding a LayerVerifier (§5.4) and ending with a RetrievalReport.
//
//   manifest: SUBSCRIBE "manifest.cose" (Next Object + FILL_PARAMETERS Relative Start 1: the
//     current version on the fill, later ones live); "manifest" only if the publisher answers
//     DOES_NOT_EXIST and signatures are not required.
//   live (kLive): SUBSCRIBE each needed data track with Next Object + FILL_PARAMETERS Absolute
//     Start 0:0 (the exactly-once join), OBJECTID_FILTER 0..n-1 of the needed blocks; segment 0
//     at once, later segments as the manifest lists them. A track is complete for us at End of
//     Track, PUBLISH_DONE TRACK_ENDED, or its fill's FIN (the session's OnComplete).
//   completed (kCompleted): after the first manifest, FETCH each needed data track for layers
//     a..b (Absolute Start, Group End; ascending) with OBJECTID_FILTER 0..n-1 (sent when the
//     peer's MAX_FILTER_RANGES allows; the session discards the excess otherwise).
//   auto (kAuto): per segment, once a manifest lists it, by its `complete` flag: a completed
//     segment is FETCHed as in kCompleted, one still being produced is SUBSCRIBEd as in kLive. A
//     FETCH that comes back short (FETCH_OK's End Location before layer b's last needed object,
//     or INVALID_RANGE: the peer, e.g. a relay still filling, did not hold the whole segment yet)
//     is continued by a SUBSCRIBE from right after the last object the FETCH delivered or the
//     peer said it had (LOCATION_FILTER and FILL_PARAMETERS both Absolute Start there: the fill
//     brings what the peer holds by then, the subscription what arrives later): every object
//     reaches us once, none that the FETCH delivered comes again. Data is requested
//     only after the first manifest (a live join starts one round trip later than kLive's).
// It ends when every needed layer was delivered; or when every data request ended and the
// manifest marks the needed segments complete (what never came is kMissing); or when the
// publication is refused; or at the deadline, the time recomputing would take (kDeadline).
// Then it cancels what is still open and calls the done callback once. What it verified is
// reported as BlockSource::kMoqt (a layer of which any object came by a subscription) or
// kMoqtFetch (every object of the layer by FETCH). Recovery from other sources builds on it:
// recovery.h.
//
// Protocol logic only: no sockets; time from `clock_ms`, and the owner calls OnTimer() (an
// endpoint's timer, or a test). THREADING: the session's thread. LIFETIME: the MoqtSession
// outlives the Retrieval; destroying the Retrieval cancels its requests and no callback fires
// after. The callbacks may destroy the Retrieval only from the done callback.
#ifndef KVCS_KVCS_STREAM_RETRIEVAL_H_
#define KVCS_KVCS_STREAM_RETRIEVAL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"
#include "kvcs_stream/digest_pool.h"
#include "kvcs_stream/layer_verifier.h"
#include "kvcs_stream/object_protection.h"
#include "kvcs_stream/retrieval_report.h"
#include "moqt_session/moqt_session.h"
#include "profile/track_name.h"

namespace kvcs::stream {

enum class RetrievalMode {
  kLive,       // §5.2 for every segment: SUBSCRIBE Next Object + fill from 0:0
  kCompleted,  // §5.3 for every segment: FETCH layers a..b
  kAuto,       // per segment by the manifest's `complete`; a short FETCH continued live
};
// "live", "completed", "auto".
std::string_view RetrievalModeName(RetrievalMode m);

// The manifest gates the verification of every layer and a version is small: by default its
// subscription goes before the data (0 is the highest subscriber priority), so that it is not
// starved behind megabytes of objects a layer cannot be verified without.
inline constexpr uint8_t kDefaultManifestSubscriberPriority = 0;

// One object as it arrived from the peer (before decryption and verification; duplicates and
// objects that then fail verification included), for progress and metrics.
struct ReceivedObjectInfo {
  std::string_view track;  // valid during the callback
  profile::TrackKind kind = profile::TrackKind::kData;
  moqt::Location location;
  uint64_t payload_bytes = 0;
  bool fetched = false;  // by FETCH; else by a subscription (its fill included)
  uint64_t at_ms = 0;    // clock_ms at arrival
};

// A floor for the recompute bound: a retrieval gets at least a few round trips and a SETUP.
inline constexpr uint64_t kDefaultMinDeadlineMs = 1000;

// Codec choice inside a Retrieval (issue 13): with several encodings offered, which one to
// retrieve, by the link's rate against the caller's compute time (encoding_choice.h's rule).
struct EncodingChoiceOptions {
  bool allow_lossy = true;
  std::optional<double> zstd_ratio;  // encoded / raw bytes for zstd, when known
  // The link's rate when the caller knows it (e.g. a previous RetrievalReport's
  // data_rate_bytes_per_s); 0: measured on the first manifest version's arrival (its bytes over
  // the time since the SUBSCRIBE: a lower bound, it includes a round trip).
  double rate_bytes_per_s = 0;
};

struct RetrievalOptions {
  RetrievalMode mode = RetrievalMode::kLive;
  VerifierConfig verifier;
  // The caller's cost of computing one token through one layer; the retrieval is bounded by
  // what recomputing the needed blocks and layers would take (never below min_deadline_ms).
  uint64_t compute_ns_per_token_layer = 0;
  uint64_t min_deadline_ms = kDefaultMinDeadlineMs;
  // Nonzero: the absolute deadline (clock_ms) instead of now + the recompute bound (a Recovery
  // gives each source its share of the whole retrieval's bound).
  uint64_t deadline_at_ms = 0;
  uint8_t subscriber_priority = 128;  // of the data tracks' SUBSCRIBEs and FETCHes
  // Of the manifest track's SUBSCRIBE (and the FETCH of a closed publication's last version).
  uint8_t manifest_subscriber_priority = kDefaultManifestSubscriberPriority;
  // Called for every Normal object received (manifest and data), on the session's thread, before
  // it is verified. It must not destroy the Retrieval.
  std::function<void(const ReceivedObjectInfo&)> on_object_received;
  // Set: objects carrying a Key ID are decrypted before verification (secure objects); one that
  // does not open is discarded, reported (kUndecryptable, kUnknownKeyId) and so missing.
  std::optional<ObjectDecryption> decryption;
  // Off-thread hashing (the one SHA-256 of each data object's Data that §5.4 needs): with
  // verify_threads > 0 and `post` set, each data object is taken over (the session's reassembly
  // buffer, ReceivedObject::TakePayload) or copied once, hashed on one of
  // verify_threads worker threads the Retrieval owns, and handed back through `post`, which must
  // run it on the session's thread (e.g. asio::post to its io_context); the session's thread then
  // does the rest (header checks, manifest, delivery) without hashing. Objects in flight count
  // toward verifier.max_buffered_bytes; beyond it an object is verified on the session's thread.
  // 0 (default): everything on the session's thread.
  uint32_t verify_threads = 0;
  std::function<void(std::function<void()>)> post;
  // Set: the encoding is chosen when the first manifest version shows what segment 0 offers
  // (OfferedEncodings, ChooseEncoding with the rate and compute_ns_per_token_layer), and
  // verifier.encoding is ignored. Data is requested only then (a live join starts one round trip
  // later than without). The report says what was chosen and at which rate.
  std::optional<EncodingChoiceOptions> choose_encoding;
  // At the end, hand over the verified blocks of layers that never completed (one callback per
  // run of consecutive blocks, LayerVerifier::DeliverVerifiedBlocks), so that a corrupt or
  // missing object costs its block rather than its whole layer; the report counts them as
  // delivered. Off: such layers are reported for recompute whole.
  bool deliver_verified_blocks = false;
};

// Recomputing `blocks` blocks of `block_tokens` tokens through `layers` layers at
// ns_per_token_layer, in ns, saturating at UINT64_MAX (a huge cost means "no useful bound", not an
// overflow into a tiny one).
uint64_t RecomputeNs(uint64_t blocks, uint32_t block_tokens, uint32_t layers,
                     uint64_t ns_per_token_layer);

// The recompute bound in milliseconds: RecomputeNs in ms, at least floor_ms (UINT64_MAX / 2 when
// RecomputeNs saturates).
uint64_t RecomputeBoundMs(uint64_t blocks, uint32_t block_tokens, uint32_t layers,
                          uint64_t ns_per_token_layer, uint64_t floor_ms);

class Retrieval {
 public:
  using DoneCallback = std::function<void(const RetrievalReport&)>;
  // Starts at once (the session must have completed SETUP). Errors: the session refused the
  // first SUBSCRIBE (not ready, closed...).
  static Result<std::unique_ptr<Retrieval>> Start(moqt::MoqtSession* session,
                                                  RetrievalOptions options, LayerCallback on_layer,
                                                  DoneCallback on_done,
                                                  std::function<uint64_t()> clock_ms);
  ~Retrieval();
  Retrieval(const Retrieval&) = delete;
  Retrieval& operator=(const Retrieval&) = delete;

  // Fires the deadline when it has passed; ends the retrieval (kMissing) when the session closed.
  void OnTimer();
  bool done() const { return done_; }
  uint64_t deadline_ms() const { return deadline_ms_; }
  // Valid once done().
  const RetrievalReport& report() const { return report_; }
  const LayerVerifier& verifier() const { return verifier_; }
  // Null unless the options ask for decryption.
  const PayloadDecryptor* decryptor() const { return decryptor_ ? &*decryptor_ : nullptr; }

  // Internal: the visitors' entry points.
  struct Request;
  void OnManifestObject(Request& r, const moqt::ReceivedObject& o);
  void OnDataObject(Request& r, const moqt::ReceivedObject& o);
  void OnRequestEnded(Request& r, const std::optional<moqt::RequestError>& error);
  // kAuto: a data FETCH ended short of layer b's last needed object; continues it by a
  // subscription from where it stopped. False: it was not short (or not to be continued).
  bool ContinueShortFetch(Request& ended, const moqt::FetchDone& d);
  // The manifest track ended before any version reached us: FETCH group `group`'s version.
  void FetchLastManifest(Request& ended, uint64_t group);
  // A data object hashed by the pool, back on the session's thread.
  void OnHashed(const moqt::FullTrackName& track, moqt::Location loc, Bytes payload,
                const Digest& data_sha256);

 private:
  Retrieval(moqt::MoqtSession* session, RetrievalOptions options, LayerCallback on_layer,
            DoneCallback on_done, std::function<uint64_t()> clock_ms);
  Status SubscribeManifest(profile::TrackKind kind);
  Status RequestSegment(const NeededSegment& s);
  // One data track of segment `segment` (Object IDs 0..objects-1): a SUBSCRIBE (§5.2's join, or
  // with `from` the continuation of a short FETCH from there), or a FETCH of layers a..b.
  Result<std::shared_ptr<Request>> SubscribeData(const moqt::FullTrackName& name, uint32_t segment,
                                                 uint64_t objects,
                                                 std::optional<moqt::Location> from);
  Result<std::shared_ptr<Request>> FetchData(const moqt::FullTrackName& name, uint32_t segment,
                                             uint64_t objects);
  // `replacement` takes over `ended`'s track while `ended` is still running its OnComplete.
  void Replace(Request& ended, std::shared_ptr<Request> replacement);
  void NoteArrival(const Request& r, const moqt::ReceivedObject& o);  // on_object_received
  // Finish: kMoqt -> kMoqtFetch for the layers every object of which came by FETCH.
  void MarkFetchedLayers(RetrievalReport* report) const;
  void RequestNeededSegments();
  void CheckDone();
  // choose_encoding: picks the encoding once the first manifest version (of `bytes`) arrived.
  void ApplyEncodingChoice(size_t manifest_bytes);
  void Finish(StreamError rest);
  void Cancel(Request& r);
  // The payload to verify (decrypted when the options ask for it); false: discarded, reported.
  bool OpenPayload(Request& r, const moqt::ReceivedObject& o, ByteSpan* payload,
                   secure::OpenedPayload* storage);

  moqt::MoqtSession* session_;
  RetrievalOptions options_;
  moqt::TrackNamespace ns_;
  LayerVerifier verifier_;
  DoneCallback on_done_;
  std::function<uint64_t()> clock_ms_;
  uint64_t deadline_ms_ = 0;
  std::map<std::string, std::shared_ptr<Request>> requests_;  // by track name
  std::vector<std::shared_ptr<Request>> retired_;             // replaced while running
  std::set<uint32_t> requested_segments_;
  std::set<uint32_t> fetched_segments_;                  // requested by FETCH
  std::set<std::pair<uint32_t, uint32_t>> live_layers_;  // (segment, layer): an object came live
  bool done_ = false;
  RetrievalReport report_;
  std::optional<PayloadDecryptor> decryptor_;
  // Off-thread hashing (verify_threads): false once the Retrieval is gone, for posted results.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::unique_ptr<DigestPool> pool_;
  uint64_t hashing_ = 0, hashing_bytes_ = 0;  // objects and bytes in the pool
  bool choosing_ = false;                     // choose_encoding, until the first manifest
  uint64_t started_ms_ = 0;
  double choice_rate_ = 0;
  // The data objects' arrival (report_.data_rate_bytes_per_s).
  uint64_t data_bytes_ = 0, first_data_ms_ = 0, last_data_ms_ = 0;
};

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_RETRIEVAL_H_
