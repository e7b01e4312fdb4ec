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
// It ends when every needed layer was delivered; or when every data request ended and the
// manifest marks the needed segments complete (what never came is kMissing); or when the
// publication is refused; or at the deadline, the time recomputing would take (kDeadline).
// Then it cancels what is still open and calls the done callback once. What it verified is
// reported as BlockSource::kMoqt (live) or kMoqtFetch (completed). Recovery from other sources
// builds on it: recovery.h.
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

#include "common/status.h"
#include "kvcs_stream/layer_verifier.h"
#include "kvcs_stream/object_protection.h"
#include "kvcs_stream/retrieval_report.h"
#include "moqt_session/moqt_session.h"

namespace kvcs::stream {

enum class RetrievalMode { kLive, kCompleted };

// A floor for the recompute bound: a retrieval gets at least a few round trips and a SETUP.
inline constexpr uint64_t kDefaultMinDeadlineMs = 1000;

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
  uint8_t subscriber_priority = 128;
  // Set: objects carrying a Key ID are decrypted before verification (secure objects); one that
  // does not open is discarded, reported (kUndecryptable, kUnknownKeyId) and so missing.
  std::optional<ObjectDecryption> decryption;
};

// The recompute bound in milliseconds: blocks · block_tokens · layers · ns, at least floor_ms.
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
  // The manifest track ended before any version reached us: FETCH group `group`'s version.
  void FetchLastManifest(Request& ended, uint64_t group);

 private:
  Retrieval(moqt::MoqtSession* session, RetrievalOptions options, LayerCallback on_layer,
            DoneCallback on_done, std::function<uint64_t()> clock_ms);
  Status SubscribeManifest(profile::TrackKind kind);
  Status RequestSegment(const NeededSegment& s);
  void RequestNeededSegments();
  void CheckDone();
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
  bool done_ = false;
  RetrievalReport report_;
  std::optional<PayloadDecryptor> decryptor_;
};

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_RETRIEVAL_H_
