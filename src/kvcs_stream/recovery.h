// Recovery: one consumer retrieval with recovery (profile §5.4, issue 13): the primary Retrieval
// of a publication, then, for every (block, layer) it did not verify (missing, corrupt, refused,
// or not arrived in time), the alternative MOQT sources in order (another relay carrying the same
// publication, or another publication of the same prefix), then the KVSP HTTP holders in order
// (kvsp.md §8); what none of them delivers is reported for recompute. The RetrievalReport says
// per (block, layer) where the bytes came from: kMoqt / kMoqtFetch (the primary), kAltMoqt,
// kHttpHolder, with `source_index` into `sources`, or kRecompute with the primary's reason.
//
// Deadlines. The caller's compute cost c (ns per token per layer) prices recomputing: for N
// blocks of B tokens and L layers the whole retrieval is bounded by
//     T = max(floor, N·B·L·c)                  (RecomputeBoundMs; D = start + T)
// and never runs past D. The primary gets until start + T/2 when any recovery source is given
// (else D): a publisher that stops leaves time to recover. When the primary ends with m
// (block, layer) pairs not verified, recovering them is worth only what recomputing them costs:
//     D_r = min(D, now + max(floor, m·B·c))
// and each remaining source (alternatives, then holders) gets an equal share of what is left:
//     deadline_i = now + (D_r − now) / (sources left)
// so one source that hangs cannot starve the later ones.
//
// Verification. An alternative MOQT source runs a full Retrieval (kLive: it takes a completed
// and a live publication alike) for the blocks and layers still missing, under its own manifest
// (§5.4); a different publication's bytes are used only when no manifest of the primary was
// accepted (nothing of it was delivered) or both manifests say deterministic (never mixes
// publications in one segment otherwise). A holder's container is verified whole
// (kvsp::VerifyContainer: names, layers, lengths against the descriptor, every layer digest) and,
// when the primary's accepted manifest lists digests for that block and layer in a raw encoding,
// each section against them (so a signed manifest also authenticates HTTP bytes). What fails is
// a refusal in the report and stays missing.
//
// Delivery: the LayerCallback gets the primary's layers as Retrieval gives them, then each
// recovered layer's blocks (first_block and one span per block; several calls per layer).
// Protocol logic only: time from `clock_ms`, the owner calls OnTimer(). THREADING: the sessions'
// thread (every session and holder callback on one thread). LIFETIME: the sessions and holders
// outlive the Recovery; destroying it cancels everything and no callback fires after; the done
// callback may destroy it.
#ifndef KVCS_KVCS_STREAM_RECOVERY_H_
#define KVCS_KVCS_STREAM_RECOVERY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "kvcs_stream/holder_source.h"
#include "kvcs_stream/retrieval.h"

namespace kvcs::stream {

// Another MOQT source: a session (SETUP complete) and the publication to take there.
struct AltMoqtSource {
  moqt::MoqtSession* session = nullptr;  // not owned
  profile::Namespace publication;
  std::string name;  // for the report, e.g. the relay URL
};

struct RecoveryOptions {
  RetrievalOptions retrieval;  // the primary retrieval; its verifier config applies to all
  std::vector<AltMoqtSource> alternates;
  std::vector<HolderSource*> holders;  // not owned
};

// The deadlines above, pure. `now` and the results are clock_ms values.
struct RecoveryDeadlines {
  uint64_t end_ms = 0;      // D
  uint64_t primary_ms = 0;  // the primary's deadline
};
RecoveryDeadlines PlanDeadlines(uint64_t now, uint64_t bound_ms, bool has_recovery_sources);
// D_r: the recovery of `missing` (block, layer) pairs may run until then.
uint64_t RecoveryEndMs(uint64_t now, uint64_t end_ms, uint64_t missing, uint32_t block_tokens,
                       uint64_t ns_per_token_layer, uint64_t floor_ms);
// deadline_i: an equal share of [now, recovery_end) for each of `sources_left` sources.
uint64_t SourceDeadlineMs(uint64_t now, uint64_t recovery_end, size_t sources_left);

class Recovery {
 public:
  using DoneCallback = std::function<void(const RetrievalReport&)>;
  // Starts the primary retrieval on `primary` at once. Errors: those of Retrieval::Start.
  static Result<std::unique_ptr<Recovery>> Start(moqt::MoqtSession* primary,
                                                 RecoveryOptions options, LayerCallback on_layer,
                                                 DoneCallback on_done,
                                                 std::function<uint64_t()> clock_ms);
  ~Recovery();
  Recovery(const Recovery&) = delete;
  Recovery& operator=(const Recovery&) = delete;

  // Fires whichever deadline has passed.
  void OnTimer();
  bool done() const { return done_; }
  uint64_t deadline_ms() const { return end_ms_; }
  // Valid once done().
  const RetrievalReport& report() const { return report_; }
  // Secure objects opened and discarded (not authentic) over every MOQT source so far.
  struct SecureCounts {
    uint64_t opened = 0, failed = 0;
  };
  SecureCounts secure_counts() const;

 private:
  Recovery(RecoveryOptions options, LayerCallback on_layer, DoneCallback on_done,
           std::function<uint64_t()> clock_ms);
  void OnPrimaryDone(const RetrievalReport& r);
  std::vector<std::pair<uint64_t, uint32_t>> Missing() const;  // (block, layer)
  void NextSource();
  bool StartAlternate(size_t i, uint64_t deadline);
  void OnAltLayer(const VerifiedLayer& l);
  void OnAltDone(const RetrievalReport& r);
  void StartHolder(size_t i, uint64_t deadline);
  void OnHolderDone(std::vector<HolderBlock> blocks);
  Status UseContainer(const HolderBlock& hb);
  Status CheckListedDigests(uint64_t block, uint32_t layer, ByteSpan k, ByteSpan v) const;
  void Refuse(const std::string& where, Status s);
  void Finish();

  RecoveryOptions options_;
  LayerCallback on_layer_;
  DoneCallback on_done_;
  std::function<uint64_t()> clock_ms_;
  uint64_t end_ms_ = 0, recovery_end_ms_ = 0, source_deadline_ms_ = 0;
  std::unique_ptr<Retrieval> primary_;
  std::vector<std::unique_ptr<Retrieval>> alternates_;  // kept until the end (their manifests)
  Retrieval* alt_ = nullptr;                            // the one running
  bool alt_starting_ = false;
  std::optional<RetrievalReport> alt_early_;  // its done callback inside Retrieval::Start
  uint16_t alt_source_index_ = 0;
  bool alt_mixable_ = false;
  HolderSource* holder_ = nullptr;  // the one fetching
  std::vector<HolderFetch> holder_fetches_;
  uint16_t holder_source_index_ = 0;
  size_t next_alt_ = 0, next_holder_ = 0;
  bool primary_done_ = false, done_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  RetrievalReport report_;
};

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_RECOVERY_H_
