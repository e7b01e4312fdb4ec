// Retrieval with recovery. See recovery.h.
#include "kvcs_stream/recovery.h"

#include <algorithm>
#include <map>

#include "common/crypto.h"
#include "kvsp/container.h"
#include "profile/track_name.h"

namespace kvcs::stream {

RecoveryDeadlines PlanDeadlines(uint64_t now, uint64_t bound_ms, bool has_recovery_sources) {
  RecoveryDeadlines d;
  d.end_ms = now + bound_ms;
  d.primary_ms = has_recovery_sources ? now + bound_ms / 2 : d.end_ms;
  return d;
}

uint64_t RecoveryEndMs(uint64_t now, uint64_t end_ms, uint64_t missing, uint32_t block_tokens,
                       uint64_t ns_per_token_layer, uint64_t floor_ms) {
  // m (block, layer) pairs cost what m blocks of one layer would.
  const uint64_t bound = RecomputeBoundMs(missing, block_tokens, 1, ns_per_token_layer, floor_ms);
  return now >= end_ms ? end_ms : std::min(end_ms, now + bound);
}

uint64_t SourceDeadlineMs(uint64_t now, uint64_t recovery_end, size_t sources_left) {
  if (now >= recovery_end || sources_left == 0) return std::min(now, recovery_end);
  return now + (recovery_end - now) / sources_left;
}

Recovery::Recovery(RecoveryOptions options, LayerCallback on_layer, DoneCallback on_done,
                   std::function<uint64_t()> clock_ms)
    : options_(std::move(options)),
      on_layer_(std::move(on_layer)),
      on_done_(std::move(on_done)),
      clock_ms_(std::move(clock_ms)) {}

Recovery::~Recovery() {
  *alive_ = false;
  if (holder_ != nullptr) holder_->Cancel();
}

Result<std::unique_ptr<Recovery>> Recovery::Start(moqt::MoqtSession* primary,
                                                  RecoveryOptions options, LayerCallback on_layer,
                                                  DoneCallback on_done,
                                                  std::function<uint64_t()> clock_ms) {
  if (!clock_ms) clock_ms = [] { return uint64_t{0}; };
  std::unique_ptr<Recovery> r(
      new Recovery(std::move(options), std::move(on_layer), std::move(on_done), clock_ms));
  RetrievalOptions& o = r->options_.retrieval;
  const kvsp::Descriptor& d = o.verifier.identity.descriptor;
  uint64_t blocks = o.verifier.identity.blocks();
  if (o.verifier.max_blocks) blocks = std::min(blocks, *o.verifier.max_blocks);
  const uint32_t last = o.verifier.last_layer.value_or(d.layers ? d.layers - 1 : 0);
  const uint32_t layers = last >= o.verifier.first_layer ? last - o.verifier.first_layer + 1 : 0;
  const uint64_t now = r->clock_ms_();
  const bool recoverable = !r->options_.alternates.empty() || !r->options_.holders.empty();
  RecoveryDeadlines dl =
      PlanDeadlines(now,
                    RecomputeBoundMs(blocks, d.block_tokens, layers, o.compute_ns_per_token_layer,
                                     o.min_deadline_ms),
                    recoverable);
  r->end_ms_ = dl.end_ms;
  RetrievalOptions first = o;
  first.deadline_at_ms = dl.primary_ms;
  Recovery* self = r.get();
  std::optional<RetrievalReport> early;
  auto ret = Retrieval::Start(
      primary, first, [self](const VerifiedLayer& l) { self->on_layer_(l); },
      [self, &early](const RetrievalReport& rep) {
        if (self->primary_ == nullptr) {
          early = rep;  // inside Retrieval::Start
        } else {
          self->OnPrimaryDone(rep);
        }
      },
      clock_ms);
  if (!ret.ok()) {
    if (!recoverable) return ret.status();
    // The primary cannot even start (a closed session, a dead relay): recover everything.
    LayerVerifier nothing(o.verifier, nullptr);
    RetrievalReport rep = nothing.Report(StreamError::kRequestRefused);
    rep.AddRefusal({"", {}, ret.status()});
    r->OnPrimaryDone(rep);
    return r;
  }
  r->primary_ = std::move(*ret);
  if (early) r->OnPrimaryDone(*early);
  return r;
}

std::vector<std::pair<uint64_t, uint32_t>> Recovery::Missing() const {
  std::vector<std::pair<uint64_t, uint32_t>> out;
  for (uint32_t l = 0; l < report_.layers; ++l) {
    for (uint64_t b = 0; b < report_.blocks; ++b) {
      if (!Retrieved(report_.outcomes[l * report_.blocks + b].source)) {
        out.emplace_back(b, report_.first_layer + l);
      }
    }
  }
  return out;
}

void Recovery::Refuse(const std::string& where, Status s) {
  report_.AddRefusal({where, {}, std::move(s)});
}

void Recovery::OnPrimaryDone(const RetrievalReport& r) {
  if (primary_done_) return;
  primary_done_ = true;
  report_ = r;
  const RetrievalOptions& o = options_.retrieval;
  const uint64_t now = clock_ms_();
  recovery_end_ms_ = RecoveryEndMs(now, end_ms_, report_.recompute_count(),
                                   o.verifier.identity.descriptor.block_tokens,
                                   o.compute_ns_per_token_layer, o.min_deadline_ms);
  NextSource();
}

void Recovery::NextSource() {
  while (!done_) {
    if (Missing().empty()) return Finish();
    const uint64_t now = clock_ms_();
    if (now >= recovery_end_ms_) {
      report_.timed_out = true;
      return Finish();
    }
    const size_t left =
        (options_.alternates.size() - next_alt_) + (options_.holders.size() - next_holder_);
    if (left == 0) return Finish();
    const uint64_t deadline = SourceDeadlineMs(now, recovery_end_ms_, left);
    if (next_alt_ < options_.alternates.size()) {
      if (StartAlternate(next_alt_++, deadline)) return;
      continue;
    }
    return StartHolder(next_holder_++, deadline);
  }
}

bool Recovery::StartAlternate(size_t i, uint64_t deadline) {
  const AltMoqtSource& src = options_.alternates[i];
  uint64_t max_block = 0;
  uint32_t min_layer = UINT32_MAX, max_layer = 0;
  for (auto [b, l] : Missing()) {
    max_block = std::max(max_block, b);
    min_layer = std::min(min_layer, l);
    max_layer = std::max(max_layer, l);
  }
  RetrievalOptions o = options_.retrieval;
  o.mode = RetrievalMode::kLive;  // a fill from 0:0 takes a completed publication as well
  o.verifier.publication = src.publication;
  o.verifier.first_layer = min_layer;
  o.verifier.last_layer = max_layer;
  o.verifier.max_blocks = max_block + 1;
  o.deadline_at_ms = deadline;
  if (o.choose_encoding && primary_) {
    // The primary chose: the alternative retrieves the same encoding, without a choice's delay.
    o.verifier.encoding = primary_->verifier().encoding();
    o.choose_encoding.reset();
  }
  report_.sources.push_back("alt moqt " + src.name + " " + profile::ToString(src.publication));
  alt_source_index_ = static_cast<uint16_t>(report_.sources.size() - 1);
  const profile::Manifest* pm =
      primary_ && !primary_->verifier().refused() ? primary_->verifier().manifest() : nullptr;
  // Same publication (another relay), or nothing of the primary's was accepted: no mixing.
  alt_mixable_ = src.publication == options_.retrieval.verifier.publication || pm == nullptr ||
                 report_.count(BlockSource::kMoqt) + report_.count(BlockSource::kMoqtFetch) == 0;
  if (src.session == nullptr || src.session->closed()) {
    Refuse(report_.sources.back(),
           StreamStatus(Code::kUnavailable, StreamError::kRequestRefused, "the session is closed"));
    return false;
  }
  alt_starting_ = true;
  alt_early_.reset();
  auto ret = Retrieval::Start(
      src.session, o, [this](const VerifiedLayer& l) { OnAltLayer(l); },
      [this, alive = alive_](const RetrievalReport& rep) {
        if (!*alive) return;
        if (alt_starting_) {
          alt_early_ = rep;  // inside Retrieval::Start
        } else {
          OnAltDone(rep);
        }
      },
      clock_ms_);
  alt_starting_ = false;
  if (!ret.ok()) {
    Refuse(report_.sources.back(), ret.status());
    return false;
  }
  alternates_.push_back(std::move(*ret));
  alt_ = alternates_.back().get();
  if (alt_early_) {
    RetrievalReport rep = std::move(*alt_early_);
    alt_early_.reset();
    OnAltDone(rep);
  }
  return true;
}

void Recovery::OnAltLayer(const VerifiedLayer& l) {
  if (done_ || alt_ == nullptr) return;
  if (!alt_mixable_) {
    const profile::Manifest* pm = primary_ ? primary_->verifier().manifest() : nullptr;
    const profile::Manifest* am = alt_->verifier().manifest();
    if (pm == nullptr || am == nullptr || !pm->deterministic || !am->deterministic) {
      Refuse(report_.sources[alt_source_index_],
             StreamStatus(Code::kFailedPrecondition, StreamError::kForeignPublication,
                          "another publication, and not both manifests deterministic: layer " +
                              std::to_string(l.layer) + " not mixed in"));
      return;
    }
  }
  if (l.layer < report_.first_layer || l.layer >= report_.first_layer + report_.layers) return;
  // Hand over the runs of still-missing blocks.
  size_t i = 0;
  while (i < l.k.size()) {
    auto missing = [&](size_t j) {
      const uint64_t b = l.first_block + j;
      return b < report_.blocks && !Retrieved(report_.at(b, l.layer).source);
    };
    if (!missing(i)) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < l.k.size() && missing(j)) ++j;
    VerifiedLayer out{l.segment, l.layer, l.first_block + i, {}, {}};
    out.k.assign(l.k.begin() + i, l.k.begin() + j);
    if (!l.v.empty()) out.v.assign(l.v.begin() + i, l.v.begin() + j);
    for (size_t t = i; t < j; ++t) {
      report_.outcomes[(l.layer - report_.first_layer) * report_.blocks + l.first_block + t] = {
          BlockSource::kAltMoqt, alt_source_index_, StreamError::kNone};
    }
    ++report_.layers_delivered;
    on_layer_(out);
    i = j;
  }
}

void Recovery::OnAltDone(const RetrievalReport& r) {
  if (done_) return;
  alt_ = nullptr;
  for (const Refusal& f : r.refusals) {
    Refuse(report_.sources[alt_source_index_] + ": " + f.track, f.status);
  }
  report_.refusals_total += r.refusals_total - r.refusals.size();
  report_.objects_received += r.objects_received;
  report_.duplicates += r.duplicates;
  report_.discarded += r.discarded;
  report_.timed_out |= r.timed_out;
  NextSource();
}

void Recovery::StartHolder(size_t i, uint64_t deadline) {
  holder_ = options_.holders[i];
  report_.sources.push_back(holder_->name());
  holder_source_index_ = static_cast<uint16_t>(report_.sources.size() - 1);
  std::map<uint64_t, std::pair<uint32_t, uint32_t>> ranges;  // block -> layers
  for (auto [b, l] : Missing()) {
    auto [it, fresh] = ranges.try_emplace(b, l, l);
    if (!fresh) {
      it->second.first = std::min(it->second.first, l);
      it->second.second = std::max(it->second.second, l);
    }
  }
  std::vector<HolderFetch> fetches;
  for (auto [b, r] : ranges) fetches.push_back({b, r.first, r.second});
  holder_fetches_ = fetches;
  source_deadline_ms_ = deadline;
  const uint64_t now = clock_ms_();
  holder_->Fetch(options_.retrieval.verifier.identity, std::move(fetches),
                 deadline > now ? deadline - now : 0,
                 [this, alive = alive_](std::vector<HolderBlock> blocks) {
                   if (*alive) OnHolderDone(std::move(blocks));
                 });
}

void Recovery::OnHolderDone(std::vector<HolderBlock> blocks) {
  if (done_ || holder_ == nullptr) return;
  holder_ = nullptr;
  for (const HolderBlock& hb : blocks) {
    Status s = hb.status.ok() ? UseContainer(hb) : hb.status;
    if (!s.ok()) {
      Refuse(report_.sources[holder_source_index_] + ": block " + std::to_string(hb.block), s);
    }
  }
  NextSource();
}

Status Recovery::UseContainer(const HolderBlock& hb) {
  const CacheIdentity& id = options_.retrieval.verifier.identity;
  auto f = std::find_if(holder_fetches_.begin(), holder_fetches_.end(),
                        [&](const HolderFetch& x) { return x.block == hb.block; });
  if (f == holder_fetches_.end() || hb.block >= id.block_keys.size()) {
    return StreamStatus(Code::kInvalidArgument, StreamError::kObjectInvalid,
                        "a block that was not asked for");
  }
  const kvsp::ContainerExpectation want = kvsp::ExpectFor(
      id.descriptor, id.compat_id, id.block_keys[hb.block], static_cast<uint32_t>(hb.block + 1),
      kvsp::Codec::kRaw, static_cast<uint16_t>(f->first_layer),
      static_cast<uint16_t>(f->last_layer - f->first_layer + 1));
  auto view = kvsp::VerifyContainer(hb.container, want);
  if (!view.ok()) {
    return StreamStatus(Code::kCorruption, StreamError::kObjectInvalid,
                        "container: " + view.status().message());
  }
  for (uint32_t l = f->first_layer; l <= f->last_layer; ++l) {
    if (Retrieved(report_.at(hb.block, l).source)) continue;
    auto sec = kvsp::LayerBytes(*view, hb.container, l);
    if (!sec.ok()) return sec.status();
    KVCS_RETURN_IF_ERROR(CheckListedDigests(hb.block, l, sec->k, sec->v));
    VerifiedLayer out{0, l, hb.block, {sec->k}, {}};
    if (!sec->v.empty()) out.v.push_back(sec->v);
    const profile::Manifest* m = primary_ ? primary_->verifier().manifest() : nullptr;
    for (size_t i = 0; m != nullptr && i < m->segments.size(); ++i) {
      const profile::ManifestSegment& s = m->segments[i];
      if (hb.block >= s.first_block && hb.block < s.first_block + s.blocks) out.segment = s.segment;
    }
    report_.outcomes[(l - report_.first_layer) * report_.blocks + hb.block] = {
        BlockSource::kHttpHolder, holder_source_index_, StreamError::kNone};
    ++report_.layers_delivered;
    on_layer_(out);
  }
  return Status::Ok();
}

Status Recovery::CheckListedDigests(uint64_t block, uint32_t layer, ByteSpan k, ByteSpan v) const {
  if (primary_ == nullptr || primary_->verifier().refused()) return Status::Ok();
  const profile::Manifest* m = primary_->verifier().manifest();
  const Encoding& enc = primary_->verifier().encoding();  // the codec choice's, if it chose
  if (m == nullptr || enc.codec != kvsp::Codec::kRaw) return Status::Ok();
  for (const profile::ManifestSegment& s : m->segments) {
    if (block < s.first_block || block >= s.first_block + s.blocks || !s.object_digests) continue;
    const std::vector<profile::TrackName> tracks = EncodingTracks(enc, s.segment);
    for (size_t t = 0; t < tracks.size(); ++t) {
      auto it = s.object_digests->find(profile::FormatTrackName(tracks[t]));
      if (it == s.object_digests->end() || layer >= it->second.size()) continue;
      const std::vector<Digest>& layer_digests = it->second[layer];
      const uint64_t obj = block - s.first_block;
      if (obj >= layer_digests.size()) continue;
      Digest got = enc.joint ? Sha256().Update(k).Update(v).Finish() : Sha256::Hash(t == 0 ? k : v);
      if (got != layer_digests[obj]) {
        return StreamStatus(Code::kCorruption, StreamError::kListedDigestMismatch,
                            "layer " + std::to_string(layer) + " of block " +
                                std::to_string(block) + " differs from the manifest's " +
                                it->first + " digest");
      }
    }
  }
  return Status::Ok();
}

void Recovery::OnTimer() {
  if (done_) return;
  auto alive = alive_;
  if (!primary_done_ && primary_ != nullptr) {
    primary_->OnTimer();
    return;
  }
  if (alt_ != nullptr) {
    alt_->OnTimer();
    if (!*alive || done_) return;
  }
  const uint64_t now = clock_ms_();
  if (holder_ != nullptr && now >= source_deadline_ms_) {
    holder_->Cancel();
    Refuse(report_.sources[holder_source_index_],
           StreamStatus(Code::kUnavailable, StreamError::kDeadline, "no answer in its share"));
    holder_ = nullptr;
    report_.timed_out = true;
    NextSource();
    return;
  }
  if (now >= end_ms_) {
    report_.timed_out = true;
    Finish();
  }
}

void Recovery::Finish() {
  if (done_) return;
  done_ = true;
  if (holder_ != nullptr) {
    holder_->Cancel();
    holder_ = nullptr;
  }
  report_.deadline_ms = end_ms_;
  if (on_done_) on_done_(report_);
}

Recovery::SecureCounts Recovery::secure_counts() const {
  SecureCounts c;
  auto add = [&c](const Retrieval* r) {
    if (!r || !r->decryptor()) return;
    c.opened += r->decryptor()->opened();
    c.failed += r->decryptor()->failed();
  };
  add(primary_.get());
  for (const auto& a : alternates_) add(a.get());
  return c;
}

}  // namespace kvcs::stream
