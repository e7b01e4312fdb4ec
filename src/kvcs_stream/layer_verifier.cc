#include "kvcs_stream/layer_verifier.h"

#include <algorithm>
#include <utility>

#include "kvsp/codec.h"
#include "profile/codecs.h"
#include "profile/object.h"

namespace kvcs::stream {
namespace {

std::string Loc(moqt::Location l) {
  return std::to_string(l.group) + ":" + std::to_string(l.object);
}

}  // namespace

LayerVerifier::LayerVerifier(VerifierConfig config, LayerCallback on_layer)
    : config_(std::move(config)), on_layer_(std::move(on_layer)) {
  const uint32_t layers = config_.identity.descriptor.layers;
  last_layer_ = std::min(config_.last_layer.value_or(layers - 1), layers - 1);
  needed_blocks_ = config_.identity.blocks();
  if (config_.max_blocks) needed_blocks_ = std::min(needed_blocks_, *config_.max_blocks);
  if (config_.first_layer > last_layer_) needed_blocks_ = 0;
  report_.sources.push_back("moqt " + profile::ToString(config_.publication));
  report_.blocks = needed_blocks_;
  report_.first_layer = config_.first_layer;
  report_.layers = needed_blocks_ ? last_layer_ - config_.first_layer + 1 : 0;
}

Status LayerVerifier::Refuse(StreamError e, std::string message, const std::string& track,
                             moqt::Location loc, const Status& cause) {
  std::string m = std::move(message);
  if (!cause.ok()) m += " (" + cause.message() + ")";
  Status s = StreamStatus(Code::kCorruption, e, m);
  report_.AddRefusal({track, loc, s});
  return s;
}

Status LayerVerifier::RefuseObject(const Status& s, const std::string& track, moqt::Location loc,
                                   const Key& key) {
  StreamError e = StreamError::kObjectInvalid;
  if (s.Is(profile::ManifestError::kListedDigestMismatch)) e = StreamError::kListedDigestMismatch;
  object_refusals_[key] = e;
  return Refuse(e, "object " + track + " " + Loc(loc), track, loc, s);
}

std::optional<int> LayerVerifier::SelectedIndex(const profile::TrackName& t) const {
  std::vector<profile::TrackName> sel = EncodingTracks(config_.encoding, t.segment);
  for (size_t i = 0; i < sel.size(); ++i) {
    if (sel[i] == t) return static_cast<int>(i);
  }
  return std::nullopt;
}

uint64_t LayerVerifier::SegmentObjects(const profile::ManifestSegment& s) const {
  if (s.first_block >= needed_blocks_) return 0;
  return std::min(s.blocks, needed_blocks_ - s.first_block);
}

// ------------------------------------------------------------------------------ manifests

Status LayerVerifier::Refused() const {
  return StreamStatus(Code::kFailedPrecondition, StreamError::kPublicationRefused,
                      "the publication was refused: " + refusal_.message());
}

Status LayerVerifier::OnManifest(profile::TrackKind kind, ByteSpan payload, uint64_t group) {
  const std::string track(kind == profile::TrackKind::kManifestCose ? profile::kManifestCoseTrack
                                                                    : profile::kManifestTrack);
  const moqt::Location loc{group, 0};
  if (refused()) return Refused();
  auto sticky = [&](StreamError e, std::string m, const Status& cause = {}) {
    refusal_ = Refuse(e, std::move(m), track, loc, cause);
    return refusal_;
  };
  Result<profile::Manifest> m = Status(Code::kInternal, "unset");
  if (kind == profile::TrackKind::kManifestCose) {
    if (config_.keys == nullptr) {
      return sticky(StreamError::kUnknownKid, "no keyring to verify manifest.cose");
    }
    m = profile::VerifyManifestCose(payload, *config_.keys);
    if (!m.ok()) {
      const Status& s = m.status();
      if (s.Is(profile::CoseError::kUnknownKid)) {
        return sticky(StreamError::kUnknownKid, "manifest.cose signed by an unknown kid", s);
      }
      if (s.Is(profile::CoseError::kBadSignature) || s.Is(profile::CoseError::kAlgMismatch)) {
        return sticky(StreamError::kBadSignature, "manifest.cose signature does not verify", s);
      }
      return sticky(StreamError::kManifestInvalid, "manifest.cose malformed", s);
    }
  } else if (kind == profile::TrackKind::kManifest) {
    if (config_.require_signature) {
      return sticky(StreamError::kUnsignedManifest,
                    "the publication has only an unsigned manifest; signatures are required");
    }
    m = profile::ParseManifest(AsStringView(payload));
    if (!m.ok()) return sticky(StreamError::kManifestInvalid, "manifest malformed", m.status());
  } else {
    return sticky(StreamError::kManifestInvalid, "not a manifest track");
  }
  Status ok = CheckManifest(*m);
  if (!ok.ok()) {
    refusal_ = ok;
    report_.AddRefusal({track, loc, ok});
    return ok;
  }
  manifest_ = std::move(*m);
  UpdateSegments();
  return Progress();
}

void LayerVerifier::UpdateSegments() {
  segments_.assign(manifest_->segments.size(), {});
  for (size_t i = 0; i < manifest_->segments.size(); ++i) {
    const profile::ManifestSegment& s = manifest_->segments[i];
    SegmentState& st = segments_[i];
    if (SegmentObjects(s) == 0) continue;  // holds no needed block
    bool offered = true;
    for (const profile::TrackName& t : EncodingTracks(config_.encoding, s.segment)) {
      offered &= std::find(s.tracks.begin(), s.tracks.end(), t) != s.tracks.end();
    }
    if (!offered) {
      st.why_not = StreamError::kTrackNotOffered;
      continue;
    }
    const bool covered = s.first_block + s.blocks <= config_.identity.blocks();
    if (!covered && !config_.accept_unconfirmed_prefix) {
      st.why_not = StreamError::kNotCovered;
      continue;
    }
    if (covered) {
      auto keys = std::span(config_.identity.block_keys).subspan(s.first_block, s.blocks);
      if (profile::BlockKeysSha256(keys) != s.block_keys_sha256) {
        st.why_not = StreamError::kBlockKeysMismatch;
        continue;
      }
    }
    st.usable = true;
  }
}

Status LayerVerifier::SetEncoding(const Encoding& e) {
  if (!entries_.empty() || !delivered_.empty() || report_.objects_received > 0) {
    return StreamStatus(Code::kFailedPrecondition, StreamError::kBadArgument,
                        "the encoding is chosen before any object arrives");
  }
  config_.encoding = e;
  if (manifest_) UpdateSegments();
  return Status::Ok();
}

Status LayerVerifier::CheckManifest(const profile::Manifest& m) {
  auto err = [](StreamError e, std::string msg, const Status& cause = {}) {
    if (!cause.ok()) msg += " (" + cause.message() + ")";
    return StreamStatus(Code::kCorruption, e, std::move(msg));
  };
  Status ns = profile::CheckManifestNamespace(m, config_.publication);
  if (!ns.ok()) return err(StreamError::kCompatMismatch, "manifest compat vs namespace", ns);
  const kvsp::Descriptor& want = config_.identity.descriptor;
  if (!(m.compat == want)) {
    return err(StreamError::kDescriptorMismatch,
               "manifest describes " + std::to_string(m.layers) + " layers of " + m.compat.model +
                   ", the caller's descriptor " + std::to_string(want.layers) + " of " +
                   want.model);
  }
  const profile::ManifestSegment& s0 = m.segments[0];
  if (s0.blocks <= config_.identity.blocks() &&
      config_.identity.anchor(s0.blocks) != config_.publication.anchor_key) {
    return err(StreamError::kBlockKeysMismatch,
               "segment 0 does not end at the namespace's Anchor Key for the caller's tokens");
  }
  if (s0.blocks <= config_.identity.blocks() &&
      profile::BlockKeysSha256(std::span(config_.identity.block_keys).first(s0.blocks)) !=
          s0.block_keys_sha256) {
    return err(StreamError::kBlockKeysMismatch, "segment 0 block_keys_sha256 is not ours");
  }
  return CheckAgainstPrevious(m);
}

Status LayerVerifier::CheckAgainstPrevious(const profile::Manifest& m) const {
  if (!manifest_) return Status::Ok();
  auto conflict = [](std::string msg) {
    return StreamStatus(Code::kCorruption, StreamError::kManifestConflict, std::move(msg));
  };
  const profile::Manifest& old = *manifest_;
  if (m.deterministic != old.deterministic) return conflict("deterministic changed");
  if (m.segments.size() < old.segments.size()) return conflict("a segment disappeared");
  for (size_t i = 0; i < old.segments.size(); ++i) {
    const profile::ManifestSegment &a = old.segments[i], &b = m.segments[i];
    const std::string seg = "segment " + std::to_string(i) + ": ";
    if (a.first_block != b.first_block || a.blocks != b.blocks ||
        a.block_keys_sha256 != b.block_keys_sha256 || a.tracks != b.tracks) {
      return conflict(seg + "blocks, keys or tracks changed");
    }
    if (a.complete && !b.complete) return conflict(seg + "no longer complete");
    if (!a.object_digests) continue;
    for (const auto& [track, groups] : *a.object_digests) {
      if (!b.object_digests || !b.object_digests->count(track)) {
        return conflict(seg + "digests of " + track + " disappeared");
      }
      const auto& now = b.object_digests->at(track);
      if (now.size() < groups.size() || !std::equal(groups.begin(), groups.end(), now.begin())) {
        return conflict(seg + "digests of " + track + " changed");
      }
    }
  }
  return Status::Ok();
}

// -------------------------------------------------------------------------------- objects

Status LayerVerifier::OnObject(const moqt::FullTrackName& track, moqt::Location loc,
                               ByteSpan payload) {
  return Accept(track, loc, payload, nullptr, nullptr);
}

Status LayerVerifier::OnObject(const moqt::FullTrackName& track, moqt::Location loc, Bytes payload,
                               const Digest& data_sha256) {
  const ByteSpan span(payload);
  return Accept(track, loc, span, &payload, &data_sha256);
}

Status LayerVerifier::Accept(const moqt::FullTrackName& track, moqt::Location loc, ByteSpan payload,
                             Bytes* owned, const Digest* data_sha256) {
  ++report_.objects_received;
  if (track.track_namespace != ToMoqtNamespace(config_.publication)) {
    return Refuse(StreamError::kForeignPublication,
                  "object of another publication's track " + track.name, track.name, loc);
  }
  if (refused()) return Refused();
  auto name = profile::ParseTrackName(track.name);
  std::optional<int> idx;
  if (name.ok() && name->is_data()) idx = SelectedIndex(*name);
  if (!idx || loc.group < config_.first_layer || loc.group > last_layer_ ||
      loc.object >= needed_blocks_) {
    ++report_.discarded;
    return Status::Ok();
  }
  const uint32_t seg = name->segment;
  if (manifest_ && seg < manifest_->segments.size()) {
    const profile::ManifestSegment& s = manifest_->segments[seg];
    if (!segments_[seg].usable || loc.object >= SegmentObjects(s)) {
      ++report_.discarded;
      return Status::Ok();
    }
  } else if (seg == 0 && loc.object >= needed_blocks_) {
    ++report_.discarded;
    return Status::Ok();
  }
  const Key key{seg, static_cast<uint32_t>(*idx), static_cast<uint32_t>(loc.group), loc.object};
  if (delivered_.count({seg, static_cast<uint32_t>(loc.group)})) {
    ++report_.duplicates;
    return Status::Ok();
  }
  auto it = entries_.find(key);
  if (!seen_.insert(key).second) ++report_.duplicates;
  if (it != entries_.end()) return Status::Ok();  // the first copy stays
  // Every §3.5 check that needs no manifest, at once.
  auto codec = profile::CodecValueForName(name->codec);
  profile::ObjectExpectation e;
  e.group_id = loc.group;
  e.object_id = loc.object;
  e.component = name->component;
  e.codec = codec;
  e.block_tokens = config_.identity.descriptor.block_tokens;
  if (seg == 0) e.token_start = loc.object * config_.identity.descriptor.block_tokens;
  auto view = data_sha256 != nullptr ? profile::DecodeObjectWithDigest(payload, e, *data_sha256)
                                     : profile::DecodeObject(payload, e);
  if (!view.ok()) return RefuseObject(view.status(), track.name, loc, key);
  if (buffered_ + payload.size() > config_.max_buffered_bytes) {
    object_refusals_[key] = StreamError::kBufferFull;
    return Refuse(StreamError::kBufferFull, "buffer bound reached", track.name, loc);
  }
  object_refusals_.erase(key);
  buffered_ += payload.size();
  Bytes kept = owned != nullptr ? std::move(*owned) : Bytes(payload.begin(), payload.end());
  auto added = entries_.emplace(key, Entry{std::move(kept), view->header, false}).first;
  // Only this object can have become verifiable (the others wait for a manifest: Progress), and
  // only its layer complete: O(1) per object, not a walk over everything buffered.
  if (!manifest_ || seg >= manifest_->segments.size()) return Status::Ok();
  Status st = VerifyEntry(key, added->second);
  if (LayerReady(seg, static_cast<uint32_t>(loc.group))) {
    Status d = Deliver(seg, static_cast<uint32_t>(loc.group));
    if (st.ok()) st = d;
  }
  return st;
}

Status LayerVerifier::VerifyEntry(const Key& key, Entry& e) {
  const auto [seg, idx, layer, obj] = key;
  const profile::ManifestSegment& s = manifest_->segments[seg];
  profile::TrackName t = EncodingTracks(config_.encoding, seg)[idx];
  const std::string name = profile::FormatTrackName(t);
  const bool listed = profile::ListedDigest(*manifest_, t, layer, obj).has_value();
  if (!listed && !s.complete) return Status::Ok();  // wait for a manifest listing it
  // The Data was hashed at arrival (DecodeObject): only the manifest's part remains.
  Status v = profile::CheckVerifiedObject(*manifest_, t, layer, obj, e.header);
  if (!v.ok()) {
    buffered_ -= e.payload.size();
    entries_.erase(key);
    return RefuseObject(v, name, {layer, obj}, key);
  }
  e.verified = true;
  return Status::Ok();
}

Status LayerVerifier::Progress() {
  if (!manifest_) return Status::Ok();
  Status first;
  std::set<std::pair<uint32_t, uint32_t>> touched;
  for (auto it = entries_.begin(); it != entries_.end();) {
    const Key key = it->first;
    ++it;  // VerifyEntry may erase the entry
    const uint32_t seg = std::get<0>(key);
    if (seg >= manifest_->segments.size()) continue;  // a segment the manifest does not list yet
    Entry& e = entries_.at(key);
    if (!segments_[seg].usable || std::get<3>(key) >= SegmentObjects(manifest_->segments[seg])) {
      buffered_ -= e.payload.size();
      entries_.erase(key);
      ++report_.discarded;
      continue;
    }
    if (!e.verified) {
      Status s = VerifyEntry(key, e);
      if (!s.ok() && first.ok()) first = s;
    }
    touched.insert({seg, std::get<2>(key)});
  }
  for (const auto& [seg, layer] : touched) {
    if (LayerReady(seg, layer)) {
      Status s = Deliver(seg, layer);
      if (!s.ok() && first.ok()) first = s;
    }
  }
  return first;
}

bool LayerVerifier::LayerReady(uint32_t seg, uint32_t layer) const {
  if (delivered_.count({seg, layer})) return false;
  const uint64_t n = SegmentObjects(manifest_->segments[seg]);
  const size_t tracks = EncodingTracks(config_.encoding, seg).size();
  for (uint32_t t = 0; t < tracks; ++t) {
    for (uint64_t o = 0; o < n; ++o) {
      auto it = entries_.find(Key{seg, t, layer, o});
      if (it == entries_.end() || !it->second.verified) return false;
    }
  }
  return true;
}

Status LayerVerifier::Assemble(uint32_t seg, uint32_t layer, uint64_t begin, uint64_t end,
                               VerifiedLayer* out, std::vector<Bytes>* decoded) {
  const kvsp::Descriptor& d = config_.identity.descriptor;
  const profile::ManifestSegment& s = manifest_->segments[seg];
  std::vector<profile::TrackName> tracks = EncodingTracks(config_.encoding, seg);
  const bool raw = config_.encoding.codec == kvsp::Codec::kRaw;
  out->segment = seg;
  out->layer = layer;
  out->first_block = s.first_block + begin;
  decoded->reserve(2 * (end - begin));
  for (uint64_t o = begin; o < end; ++o) {
    ByteSpan k, v;
    for (uint32_t t = 0; t < tracks.size(); ++t) {
      const Bytes& p = entries_.at(Key{seg, t, layer, o}).payload;
      ByteSpan data = ByteSpan(p).subspan(profile::kObjectHeaderSize);
      const profile::Component c = tracks[t].component;
      if (raw) {
        if (c == profile::Component::kKV) {
          const uint64_t kb = kvsp::KSectionBytes(d);
          k = data.first(kb);
          v = data.subspan(kb);
        } else {
          (c == profile::Component::kK ? k : v) = data;
        }
        continue;
      }
      Bytes dk, dv;
      Status status = DecodeData(d, config_.encoding.codec, c, data, &dk, &dv);
      if (!status.ok()) {
        object_refusals_[Key{seg, t, layer, o}] = StreamError::kUndecodable;
        report_.AddRefusal({profile::FormatTrackName(tracks[t]), {layer, o}, status});
        return status;
      }
      if (c != profile::Component::kV) k = decoded->emplace_back(std::move(dk));
      if (c != profile::Component::kK) v = decoded->emplace_back(std::move(dv));
    }
    out->k.push_back(k);
    out->v.push_back(v);
  }
  return Status::Ok();
}

void LayerVerifier::Release(uint32_t seg, uint32_t layer, uint64_t begin, uint64_t end) {
  const size_t tracks = EncodingTracks(config_.encoding, seg).size();
  for (uint32_t t = 0; t < tracks; ++t) {
    for (uint64_t o = begin; o < end; ++o) {
      auto it = entries_.find(Key{seg, t, layer, o});
      if (it == entries_.end()) continue;
      buffered_ -= it->second.payload.size();
      entries_.erase(it);
    }
  }
}

Status LayerVerifier::Deliver(uint32_t seg, uint32_t layer) {
  const uint64_t n = SegmentObjects(manifest_->segments[seg]);
  VerifiedLayer out;
  std::vector<Bytes> decoded;  // keeps decoded sections alive for the callback
  // An undecodable layer is not delivered (its objects stay, reported kUndecodable).
  KVCS_RETURN_IF_ERROR(Assemble(seg, layer, 0, n, &out, &decoded));
  delivered_.insert({seg, layer});
  ++report_.layers_delivered;
  if (on_layer_) on_layer_(out);
  // The spans were valid during the callback only: release the layer's buffers.
  Release(seg, layer, 0, n);
  return Status::Ok();
}

bool LayerVerifier::BlockVerified(uint32_t seg, uint32_t layer, uint64_t obj) const {
  const size_t tracks = EncodingTracks(config_.encoding, seg).size();
  for (uint32_t t = 0; t < tracks; ++t) {
    auto it = entries_.find(Key{seg, t, layer, obj});
    if (it == entries_.end() || !it->second.verified) return false;
  }
  return true;
}

void LayerVerifier::DeliverVerifiedBlocks() {
  if (!manifest_ || refused()) return;
  for (size_t i = 0; i < manifest_->segments.size(); ++i) {
    const uint32_t seg = static_cast<uint32_t>(i);
    if (!segments_[i].usable) continue;
    const uint64_t n = SegmentObjects(manifest_->segments[i]);
    for (uint32_t layer = config_.first_layer; layer <= last_layer_; ++layer) {
      if (delivered_.count({seg, layer})) continue;
      for (uint64_t o = 0; o < n;) {
        if (!BlockVerified(seg, layer, o)) {
          ++o;
          continue;
        }
        uint64_t e = o + 1;
        while (e < n && BlockVerified(seg, layer, e)) ++e;
        VerifiedLayer out;
        std::vector<Bytes> decoded;
        if (Assemble(seg, layer, o, e, &out, &decoded).ok()) {
          for (uint64_t b = o; b < e; ++b) delivered_blocks_.insert({seg, layer, b});
          if (on_layer_) on_layer_(out);
        }
        Release(seg, layer, o, e);
        o = e;
      }
    }
  }
}

// ------------------------------------------------------------------------------- queries

std::vector<NeededSegment> LayerVerifier::NeededSegments() const {
  std::vector<NeededSegment> out;
  if (!manifest_ || refused()) return out;
  for (size_t i = 0; i < manifest_->segments.size(); ++i) {
    const profile::ManifestSegment& s = manifest_->segments[i];
    if (!segments_[i].usable) continue;
    out.push_back({s.segment, s.first_block, SegmentObjects(s),
                   EncodingTracks(config_.encoding, s.segment), s.complete});
  }
  return out;
}

bool LayerVerifier::AllDelivered() const {
  if (needed_blocks_ == 0) return true;
  if (!manifest_ || refused()) return false;
  uint64_t covered = 0;
  for (size_t i = 0; i < manifest_->segments.size(); ++i) {
    const profile::ManifestSegment& s = manifest_->segments[i];
    const uint64_t n = SegmentObjects(s);
    if (n == 0) continue;
    if (!segments_[i].usable) return false;
    for (uint32_t l = config_.first_layer; l <= last_layer_; ++l) {
      if (!delivered_.count({static_cast<uint32_t>(i), l})) return false;
    }
    covered += n;
  }
  return covered == needed_blocks_;
}

bool LayerVerifier::NeededSegmentsComplete() const {
  if (!manifest_ || refused()) return false;
  // Blocks beyond the last listed segment could still come as a new segment; a retrieval does
  // not wait for one (they are reported kNotCovered).
  for (const profile::ManifestSegment& s : manifest_->segments) {
    if (SegmentObjects(s) > 0 && !s.complete) return false;
  }
  return true;
}

RetrievalReport LayerVerifier::Report(StreamError rest) const {
  RetrievalReport r = report_;
  r.outcomes.assign(uint64_t{r.layers} * r.blocks, BlockOutcome{});
  for (uint32_t l = 0; l < r.layers; ++l) {
    const uint32_t layer = r.first_layer + l;
    for (uint64_t b = 0; b < r.blocks; ++b) {
      BlockOutcome& o = r.outcomes[l * r.blocks + b];
      o.source = BlockSource::kRecompute;
      if (refused()) {
        o.reason = StreamError::kPublicationRefused;
        continue;
      }
      o.reason = manifest_ ? StreamError::kNotCovered : rest;
      if (!manifest_) continue;
      for (size_t i = 0; i < manifest_->segments.size(); ++i) {
        const profile::ManifestSegment& s = manifest_->segments[i];
        if (b < s.first_block || b >= s.first_block + s.blocks) continue;
        const uint32_t seg = static_cast<uint32_t>(i);
        if (!segments_[i].usable) {
          o.reason = segments_[i].why_not;
        } else if (delivered_.count({seg, layer}) ||
                   delivered_blocks_.count({seg, layer, b - s.first_block})) {
          o = {BlockSource::kMoqt, 0, StreamError::kNone};
        } else {
          o.reason = rest;
          const size_t tracks = EncodingTracks(config_.encoding, seg).size();
          for (uint32_t t = 0; t < tracks; ++t) {
            auto it = object_refusals_.find(Key{seg, t, layer, b - s.first_block});
            if (it != object_refusals_.end()) o.reason = it->second;
          }
        }
      }
    }
  }
  return r;
}

}  // namespace kvcs::stream
