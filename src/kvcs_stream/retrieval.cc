#include "kvcs_stream/retrieval.h"

#include <algorithm>
#include <utility>

#include "kvcs_stream/encoding_choice.h"
#include "profile/object.h"
#include "profile/track_name.h"

namespace kvcs::stream {

uint64_t RecomputeBoundMs(uint64_t blocks, uint32_t block_tokens, uint32_t layers,
                          uint64_t ns_per_token_layer, uint64_t floor_ms) {
  // Saturating: a huge cost means "no useful bound", not an overflow into a tiny one.
  const long double ns = static_cast<long double>(blocks) * block_tokens * layers *
                         static_cast<long double>(ns_per_token_layer);
  const long double ms = ns / 1e6L;
  if (ms >= static_cast<long double>(UINT64_MAX / 2)) return UINT64_MAX / 2;
  return std::max<uint64_t>(floor_ms, static_cast<uint64_t>(ms));
}

// One SUBSCRIBE or FETCH of ours, and its visitor's back pointer.
struct Retrieval::Request : moqt::SubscribeVisitor, moqt::FetchVisitor {
  Retrieval* owner = nullptr;  // null once the Retrieval is gone
  moqt::FullTrackName name;
  profile::TrackKind kind = profile::TrackKind::kData;
  bool fetch = false;
  uint64_t id = 0;
  bool ended = false;
  bool got_object = false;
  std::optional<moqt::RequestError> error;
  std::optional<moqt::Location> largest;  // SUBSCRIBE_OK's

  void OnSubscribeOk(const moqt::SubscribeOkInfo& info) override { largest = info.largest; }
  void OnObject(const moqt::ReceivedObject& o) override {
    if (owner == nullptr || ended) return;
    if (kind == profile::TrackKind::kData) {
      owner->OnDataObject(*this, o);
    } else {
      owner->OnManifestObject(*this, o);
    }
  }
  void OnComplete(const moqt::SubscriptionDone& d) override {
    if (owner == nullptr || ended) return;
    // A closed publication's manifest track has ended: its End of Track sits in a group of its
    // own, so the fill from the Largest Object's group found no version. FETCH the last one.
    if (kind != profile::TrackKind::kData && !fetch && !d.error && d.track_ended && !got_object &&
        largest && largest->group > 0) {
      owner->FetchLastManifest(*this, largest->group - 1);
      return;
    }
    owner->OnRequestEnded(*this, d.error);
  }
  void OnComplete(const moqt::FetchDone& d) override {
    if (owner != nullptr && !ended) owner->OnRequestEnded(*this, d.error);
  }
};

Retrieval::Retrieval(moqt::MoqtSession* session, RetrievalOptions options, LayerCallback on_layer,
                     DoneCallback on_done, std::function<uint64_t()> clock_ms)
    : session_(session),
      options_(std::move(options)),
      ns_(ToMoqtNamespace(options_.verifier.publication)),
      verifier_(options_.verifier, std::move(on_layer)),
      on_done_(std::move(on_done)),
      clock_ms_(std::move(clock_ms)) {
  if (options_.decryption) {
    decryptor_.emplace(*options_.decryption);
  }
  if (options_.verify_threads > 0 && options_.post) {
    pool_ = std::make_unique<DigestPool>(options_.verify_threads);
  }
}

Retrieval::~Retrieval() {
  *alive_ = false;
  pool_.reset();  // drops what is queued; a result already posted finds alive_ false
  for (auto& [name, r] : requests_) {
    Cancel(*r);
    r->owner = nullptr;
  }
  for (auto& r : retired_) r->owner = nullptr;
}

Result<std::unique_ptr<Retrieval>> Retrieval::Start(moqt::MoqtSession* session,
                                                    RetrievalOptions options,
                                                    LayerCallback on_layer, DoneCallback on_done,
                                                    std::function<uint64_t()> clock_ms) {
  if (!clock_ms) clock_ms = [] { return uint64_t{0}; };
  std::unique_ptr<Retrieval> r(new Retrieval(session, std::move(options), std::move(on_layer),
                                             std::move(on_done), std::move(clock_ms)));
  const kvsp::Descriptor& d = r->options_.verifier.identity.descriptor;
  const uint32_t layers =
      r->verifier_.needed_blocks() ? r->verifier_.last_layer() - r->verifier_.first_layer() + 1 : 0;
  r->deadline_ms_ =
      r->options_.deadline_at_ms
          ? r->options_.deadline_at_ms
          : r->clock_ms_() + RecomputeBoundMs(r->verifier_.needed_blocks(), d.block_tokens, layers,
                                              r->options_.compute_ns_per_token_layer,
                                              r->options_.min_deadline_ms);
  r->started_ms_ = r->clock_ms_();
  r->choosing_ = r->options_.choose_encoding.has_value();
  KVCS_RETURN_IF_ERROR(r->SubscribeManifest(profile::TrackKind::kManifestCose));
  if (r->options_.mode == RetrievalMode::kLive && r->verifier_.needed_blocks() > 0 &&
      !r->choosing_) {
    // Segment 0 exists in every publication and starts at block 0: join it at once, in parallel
    // with the manifest.
    NeededSegment s0{0, 0, r->verifier_.needed_blocks(),
                     EncodingTracks(r->options_.verifier.encoding, 0), false};
    KVCS_RETURN_IF_ERROR(r->RequestSegment(s0));
  }
  r->CheckDone();
  return r;
}

Status Retrieval::SubscribeManifest(profile::TrackKind kind) {
  auto req = std::make_shared<Request>();
  req->owner = this;
  req->kind = kind;
  req->name = {ns_,
               std::string(kind == profile::TrackKind::kManifestCose ? profile::kManifestCoseTrack
                                                                     : profile::kManifestTrack)};
  moqt::SubscribeOptions o;
  o.filter = {moqt::LocationFilterType::kNextObject};
  o.fill = moqt::LocationFilter{moqt::LocationFilterType::kRelativeStart, 1};
  o.subscriber_priority = options_.subscriber_priority;
  KVCS_ASSIGN_OR_RETURN(req->id, session_->Subscribe(req->name, o, req));
  requests_[req->name.name] = req;
  return Status::Ok();
}

void Retrieval::FetchLastManifest(Request& ended, uint64_t group) {
  ended.ended = true;
  auto req = std::make_shared<Request>();
  req->owner = this;
  req->kind = ended.kind;
  req->name = ended.name;
  req->fetch = true;
  moqt::FetchOptions o;
  o.range = moqt::LocationFilter{moqt::LocationFilterType::kAbsoluteStartGroupEnd, group, 0, 0};
  o.subscriber_priority = options_.subscriber_priority;
  auto id = session_->Fetch(req->name, o, req);
  if (!id.ok()) {
    OnRequestEnded(ended, std::nullopt);
    return;
  }
  req->id = *id;
  // `ended` is running its OnComplete: keep it alive until the Retrieval goes.
  retired_.push_back(requests_[req->name.name]);
  requests_[req->name.name] = req;
  CheckDone();
}

Status Retrieval::RequestSegment(const NeededSegment& s) {
  if (!requested_segments_.insert(s.segment).second) return Status::Ok();
  const uint32_t a = verifier_.first_layer(), b = verifier_.last_layer();
  for (const profile::TrackName& t : s.tracks) {
    auto req = std::make_shared<Request>();
    req->owner = this;
    req->name = {ns_, profile::FormatTrackName(t)};
    std::vector<moqt::FilterRange> ranges = {{0, s.objects - 1}};
    if (options_.mode == RetrievalMode::kLive) {
      moqt::SubscribeOptions o;
      o.filter = {moqt::LocationFilterType::kNextObject};
      o.fill = moqt::LocationFilter{moqt::LocationFilterType::kAbsoluteStart, 0, 0};
      o.subscriber_priority = options_.subscriber_priority;
      o.object_id_ranges = ranges;
      KVCS_ASSIGN_OR_RETURN(req->id, session_->Subscribe(req->name, o, req));
    } else {
      req->fetch = true;
      moqt::FetchOptions o;
      o.range = moqt::LocationFilter{moqt::LocationFilterType::kAbsoluteStartGroupEnd, a, 0, b - a};
      o.group_order = moqt::GroupOrder::kAscending;
      o.subscriber_priority = options_.subscriber_priority;
      o.object_id_ranges = ranges;
      KVCS_ASSIGN_OR_RETURN(req->id, session_->Fetch(req->name, o, req));
    }
    requests_[req->name.name] = req;
  }
  return Status::Ok();
}

void Retrieval::RequestNeededSegments() {
  for (const NeededSegment& s : verifier_.NeededSegments()) {
    Status st = RequestSegment(s);
    if (!st.ok()) {
      verifier_.mutable_report().AddRefusal(
          {"", {}, StreamStatus(Code::kUnavailable, StreamError::kRequestRefused, st.message())});
    }
  }
}

void Retrieval::OnManifestObject(Request& r, const moqt::ReceivedObject& o) {
  if (o.status != moqt::ObjectStatus::kNormal) return;
  r.got_object = true;
  ByteSpan payload;
  secure::OpenedPayload plain;
  if (!OpenPayload(r, o, &payload, &plain)) return CheckDone();
  Status s = verifier_.OnManifest(r.kind, payload, o.location.group);
  if (s.ok() && choosing_) ApplyEncodingChoice(payload.size());
  if (s.ok()) RequestNeededSegments();
  CheckDone();
}

void Retrieval::ApplyEncodingChoice(size_t manifest_bytes) {
  choosing_ = false;
  const profile::Manifest* m = verifier_.manifest();
  std::vector<Encoding> offered = OfferedEncodings(m->segments[0]);
  if (offered.empty()) return;  // verifier.encoding stays (reported kTrackNotOffered)
  const EncodingChoiceOptions& c = *options_.choose_encoding;
  double rate = c.rate_bytes_per_s;
  if (rate <= 0) {
    const uint64_t elapsed_ms = std::max<uint64_t>(1, clock_ms_() - started_ms_);
    rate = static_cast<double>(manifest_bytes) * 1000.0 / static_cast<double>(elapsed_ms);
  }
  choice_rate_ = rate;
  ChoiceInputs in;
  in.rate_bytes_per_s = rate;
  in.compute_ns_per_token_layer = options_.compute_ns_per_token_layer;
  in.allow_lossy = c.allow_lossy;
  in.zstd_ratio = c.zstd_ratio;
  (void)verifier_.SetEncoding(ChooseEncoding(options_.verifier.identity.descriptor, offered, in));
}

void Retrieval::OnDataObject(Request& r, const moqt::ReceivedObject& o) {
  if (o.status != moqt::ObjectStatus::kNormal) return;
  r.got_object = true;
  last_data_ms_ = clock_ms_();
  if (data_bytes_ == 0) first_data_ms_ = last_data_ms_;
  data_bytes_ += o.payload.size();
  ByteSpan payload;
  secure::OpenedPayload plain;
  if (!OpenPayload(r, o, &payload, &plain)) return CheckDone();
  if (pool_ && hashing_bytes_ + verifier_.buffered_bytes() + payload.size() <=
                   options_.verifier.max_buffered_bytes) {
    ++hashing_;
    hashing_bytes_ += payload.size();
    // The session's reassembly buffer when it is ours to take (no copy), else a copy.
    Bytes owned = payload.data() == o.payload.data() && payload.size() == o.payload.size()
                      ? o.TakePayload()
                      : Bytes(payload.begin(), payload.end());
    pool_->Submit(std::move(owned), profile::kObjectHeaderSize,
                  [this, alive = alive_, post = options_.post, track = r.name, loc = o.location](
                      Bytes p, const Digest& d) {
                    post([this, alive, track, loc, p = std::move(p), d]() mutable {
                      if (*alive) OnHashed(track, loc, std::move(p), d);
                    });
                  });
    return;
  }
  (void)verifier_.OnObject(r.name, o.location, payload);  // refusals go into the report
  CheckDone();
}

void Retrieval::OnHashed(const moqt::FullTrackName& track, moqt::Location loc, Bytes payload,
                         const Digest& data_sha256) {
  --hashing_;
  hashing_bytes_ -= payload.size();
  if (done_) return;
  (void)verifier_.OnObject(track, loc, std::move(payload), data_sha256);
  CheckDone();
}

bool Retrieval::OpenPayload(Request& r, const moqt::ReceivedObject& o, ByteSpan* payload,
                            secure::OpenedPayload* storage) {
  if (!decryptor_) {
    *payload = o.payload;
    return true;
  }
  auto p = decryptor_->Open(r.name, o, storage);
  if (p.ok()) {
    *payload = *p;
    return true;
  }
  verifier_.mutable_report().AddRefusal({r.name.name, o.location, p.status()});
  return false;
}

void Retrieval::OnRequestEnded(Request& r, const std::optional<moqt::RequestError>& error) {
  r.ended = true;
  r.error = error;
  if (r.kind == profile::TrackKind::kManifestCose && error && !r.got_object &&
      error->error_code == static_cast<uint64_t>(moqt::RequestErrorCode::kDoesNotExist)) {
    if (options_.verifier.require_signature) {
      // Let the verifier refuse it with its typed reason.
      (void)verifier_.OnManifest(profile::TrackKind::kManifest, {}, 0);
    } else {
      Status s = SubscribeManifest(profile::TrackKind::kManifest);
      if (!s.ok()) {
        verifier_.mutable_report().AddRefusal(
            {"manifest",
             {},
             StreamStatus(Code::kUnavailable, StreamError::kRequestRefused, s.message())});
      }
    }
  } else if (error) {
    verifier_.mutable_report().AddRefusal(
        {r.name.name,
         {},
         StreamStatus(Code::kUnavailable, StreamError::kRequestRefused,
                      "REQUEST_ERROR " + std::to_string(error->error_code) + " " + error->reason)});
  }
  CheckDone();
}

void Retrieval::CheckDone() {
  if (done_) return;
  if (verifier_.refused()) return Finish(StreamError::kPublicationRefused);
  if (verifier_.manifest() && verifier_.AllDelivered()) return Finish(StreamError::kNone);
  if (hashing_ > 0) return;  // objects still in the DigestPool come back through `post`
  bool data_open = false, manifest_open = false;
  for (const auto& [name, r] : requests_) {
    if (r->ended) continue;
    (r->kind == profile::TrackKind::kData ? data_open : manifest_open) = true;
  }
  if (verifier_.manifest() && verifier_.NeededSegmentsComplete() && !data_open) {
    // Every needed segment is requested once a manifest lists it; nothing more can arrive.
    bool all_requested = true;
    for (const NeededSegment& s : verifier_.NeededSegments()) {
      all_requested &= requested_segments_.count(s.segment) > 0;
    }
    if (all_requested) return Finish(StreamError::kMissing);
  }
  if (!data_open && !manifest_open) return Finish(StreamError::kMissing);
  if (session_->closed()) return Finish(StreamError::kMissing);
}

void Retrieval::OnTimer() {
  if (done_) return;
  // A session that closed without ending our requests (a killed relay) ends the retrieval now.
  if (session_->closed()) return Finish(StreamError::kMissing);
  if (clock_ms_() < deadline_ms_) return;
  Finish(StreamError::kDeadline);
}

void Retrieval::Cancel(Request& r) {
  if (r.ended) return;
  r.ended = true;
  if (session_->closed()) return;
  if (r.fetch) {
    (void)session_->CancelFetch(r.id);
  } else {
    (void)session_->Unsubscribe(r.id);
  }
}

void Retrieval::Finish(StreamError rest) {
  if (done_) return;
  done_ = true;
  for (auto& [name, r] : requests_) Cancel(*r);
  // A layer that never completed still gives the blocks of it that verified.
  if (options_.deliver_verified_blocks) verifier_.DeliverVerifiedBlocks();
  report_ = verifier_.Report(rest);
  if (options_.mode == RetrievalMode::kCompleted) {
    for (BlockOutcome& o : report_.outcomes) {
      if (o.source == BlockSource::kMoqt) o.source = BlockSource::kMoqtFetch;
    }
  }
  report_.deadline_ms = deadline_ms_;
  report_.timed_out = rest == StreamError::kDeadline;
  report_.encoding = verifier_.encoding();
  report_.choice_rate_bytes_per_s = choice_rate_;
  if (last_data_ms_ > first_data_ms_) {
    report_.data_rate_bytes_per_s = static_cast<double>(data_bytes_) * 1000.0 /
                                    static_cast<double>(last_data_ms_ - first_data_ms_);
  }
  if (on_done_) on_done_(report_);
}

}  // namespace kvcs::stream
