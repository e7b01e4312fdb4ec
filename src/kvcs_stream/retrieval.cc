#include "kvcs_stream/retrieval.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "kvcs_stream/encoding_choice.h"
#include "profile/object.h"
#include "profile/track_name.h"

namespace kvcs::stream {

std::string_view RetrievalModeName(RetrievalMode m) {
  switch (m) {
    case RetrievalMode::kLive:
      return "live";
    case RetrievalMode::kCompleted:
      return "completed";
    case RetrievalMode::kAuto:
      return "auto";
  }
  return "?";
}

uint64_t RecomputeNs(uint64_t blocks, uint32_t block_tokens, uint32_t layers,
                     uint64_t ns_per_token_layer) {
  unsigned __int128 v = static_cast<unsigned __int128>(blocks) * block_tokens * layers;
  v *= ns_per_token_layer;
  return v > std::numeric_limits<uint64_t>::max() ? std::numeric_limits<uint64_t>::max()
                                                  : static_cast<uint64_t>(v);
}

uint64_t RecomputeBoundMs(uint64_t blocks, uint32_t block_tokens, uint32_t layers,
                          uint64_t ns_per_token_layer, uint64_t floor_ms) {
  const uint64_t ns = RecomputeNs(blocks, block_tokens, layers, ns_per_token_layer);
  if (ns == std::numeric_limits<uint64_t>::max()) return UINT64_MAX / 2;  // no useful bound
  return std::max<uint64_t>(floor_ms, ns / 1'000'000);
}

// One SUBSCRIBE or FETCH of ours, and its visitor's back pointer.
struct Retrieval::Request : moqt::SubscribeVisitor, moqt::FetchVisitor {
  Retrieval* owner = nullptr;  // null once the Retrieval is gone
  moqt::FullTrackName name;
  profile::TrackKind kind = profile::TrackKind::kData;
  bool fetch = false;
  uint32_t segment = 0;  // data: the segment, and its needed Object IDs 0..objects-1
  uint64_t objects = 0;
  std::optional<moqt::Location> last_received;  // the largest Location delivered
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
    if (owner == nullptr || ended) return;
    if (kind == profile::TrackKind::kData && owner->ContinueShortFetch(*this, d)) return;
    owner->OnRequestEnded(*this, d.error);
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
  // kAuto waits for the manifest: whether segment 0 is complete decides FETCH or SUBSCRIBE.
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
  o.subscriber_priority = options_.manifest_subscriber_priority;
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
  o.subscriber_priority = options_.manifest_subscriber_priority;
  auto id = session_->Fetch(req->name, o, req);
  if (!id.ok()) {
    OnRequestEnded(ended, std::nullopt);
    return;
  }
  req->id = *id;
  Replace(ended, std::move(req));
  CheckDone();
}

void Retrieval::Replace(Request& ended, std::shared_ptr<Request> replacement) {
  ended.ended = true;
  // `ended` is running its OnComplete: keep it alive until the Retrieval goes.
  std::shared_ptr<Request>& slot = requests_[replacement->name.name];
  retired_.push_back(std::move(slot));
  slot = std::move(replacement);
}

Result<std::shared_ptr<Retrieval::Request>> Retrieval::SubscribeData(
    const moqt::FullTrackName& name, uint32_t segment, uint64_t objects,
    std::optional<moqt::Location> from) {
  auto req = std::make_shared<Request>();
  req->owner = this;
  req->name = name;
  req->segment = segment;
  req->objects = objects;
  moqt::SubscribeOptions o;
  if (from) {
    // The continuation of a short FETCH: the fill brings what the peer holds from `from` on, the
    // subscription what arrives there later; both start at `from` (with Next Object, objects
    // before `from` published meanwhile would come too, only to be discarded).
    o.filter = {moqt::LocationFilterType::kAbsoluteStart, from->group, from->object};
    o.fill = o.filter;
  } else {
    // §5.2: Next Object + FILL_PARAMETERS Absolute Start 0:0.
    o.filter = {moqt::LocationFilterType::kNextObject};
    o.fill = moqt::LocationFilter{moqt::LocationFilterType::kAbsoluteStart, 0, 0};
  }
  o.subscriber_priority = options_.subscriber_priority;
  o.object_id_ranges = {{0, objects - 1}};
  KVCS_ASSIGN_OR_RETURN(req->id, session_->Subscribe(req->name, o, req));
  return req;
}

Result<std::shared_ptr<Retrieval::Request>> Retrieval::FetchData(const moqt::FullTrackName& name,
                                                                 uint32_t segment,
                                                                 uint64_t objects) {
  const uint32_t a = verifier_.first_layer(), b = verifier_.last_layer();
  auto req = std::make_shared<Request>();
  req->owner = this;
  req->name = name;
  req->segment = segment;
  req->objects = objects;
  req->fetch = true;
  moqt::FetchOptions o;
  o.range = moqt::LocationFilter{moqt::LocationFilterType::kAbsoluteStartGroupEnd, a, 0, b - a};
  o.group_order = moqt::GroupOrder::kAscending;
  o.subscriber_priority = options_.subscriber_priority;
  o.object_id_ranges = {{0, objects - 1}};
  KVCS_ASSIGN_OR_RETURN(req->id, session_->Fetch(req->name, o, req));
  return req;
}

Status Retrieval::RequestSegment(const NeededSegment& s) {
  if (!requested_segments_.insert(s.segment).second) return Status::Ok();
  const bool fetch = options_.mode == RetrievalMode::kCompleted ||
                     (options_.mode == RetrievalMode::kAuto && s.complete);
  if (fetch) fetched_segments_.insert(s.segment);
  for (const profile::TrackName& t : s.tracks) {
    const moqt::FullTrackName name{ns_, profile::FormatTrackName(t)};
    KVCS_ASSIGN_OR_RETURN(auto req, fetch
                                        ? FetchData(name, s.segment, s.objects)
                                        : SubscribeData(name, s.segment, s.objects, std::nullopt));
    requests_[name.name] = std::move(req);
  }
  return Status::Ok();
}

bool Retrieval::ContinueShortFetch(Request& ended, const moqt::FetchDone& d) {
  if (options_.mode != RetrievalMode::kAuto || done_ || d.session_closed || d.end_of_track ||
      session_->closed()) {
    return false;
  }
  // INVALID_RANGE: the peer held nothing from layer a on yet. Another refusal, or a fetch stream
  // reset: not a short answer (reported as a refusal, or what is missing stays missing).
  const bool nothing_yet =
      d.error &&
      d.error->error_code == static_cast<uint64_t>(moqt::RequestErrorCode::kInvalidRange);
  if (!d.ok && !nothing_yet) return false;
  // Where the FETCH stopped: the last object it delivered, or the peer's End Location when that
  // is later (objects it had but the OBJECTID_FILTER or a gap left out).
  std::optional<moqt::Location> stopped = ended.last_received;
  if (d.end_location && (!stopped || *d.end_location > *stopped)) stopped = d.end_location;
  const moqt::Location want{verifier_.last_layer(), ended.objects - 1};
  if (stopped && *stopped >= want) return false;  // the whole range: not short
  moqt::Location from{verifier_.first_layer(), 0};
  if (stopped) {
    from = stopped->object + 1 >= ended.objects
               ? moqt::Location{stopped->group + 1, 0}
               : moqt::Location{stopped->group, stopped->object + 1};
  }
  auto sub = SubscribeData(ended.name, ended.segment, ended.objects, from);
  if (!sub.ok()) return false;
  Replace(ended, std::move(*sub));
  CheckDone();
  return true;
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

void Retrieval::NoteArrival(const Request& r, const moqt::ReceivedObject& o) {
  if (!options_.on_object_received) return;
  ReceivedObjectInfo info;
  info.track = r.name.name;
  info.kind = r.kind;
  info.location = o.location;
  info.payload_bytes = o.payload.size();
  info.fetched = r.fetch;
  info.at_ms = clock_ms_();
  options_.on_object_received(info);
}

void Retrieval::OnManifestObject(Request& r, const moqt::ReceivedObject& o) {
  if (o.status != moqt::ObjectStatus::kNormal) return;
  r.got_object = true;
  NoteArrival(r, o);
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
  NoteArrival(r, o);
  if (!r.last_received || o.location > *r.last_received) r.last_received = o.location;
  if (!r.fetch && o.location.group <= UINT32_MAX) {
    live_layers_.insert({r.segment, static_cast<uint32_t>(o.location.group)});
  }
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

void Retrieval::MarkFetchedLayers(RetrievalReport* report) const {
  const profile::Manifest* m = verifier_.manifest();
  if (m == nullptr || fetched_segments_.empty()) return;
  for (const profile::ManifestSegment& s : m->segments) {
    if (!fetched_segments_.count(s.segment)) continue;
    const uint64_t end = std::min<uint64_t>(report->blocks, s.first_block + s.blocks);
    for (uint32_t l = 0; l < report->layers; ++l) {
      const uint32_t layer = report->first_layer + l;
      if (live_layers_.count({s.segment, layer})) continue;
      for (uint64_t b = s.first_block; b < end; ++b) {
        BlockOutcome& o = report->outcomes[uint64_t{l} * report->blocks + b];
        if (o.source == BlockSource::kMoqt) o.source = BlockSource::kMoqtFetch;
      }
    }
  }
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
  MarkFetchedLayers(&report_);
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
