#include "kvcs_stream/publisher.h"

#include <utility>

#include "kvcs_stream/stream_error.h"
#include "kvsp/codec.h"
#include "profile/object.h"
#include "profile/track_name.h"

namespace kvcs::stream {
namespace {

Status Bad(StreamError e, std::string m) {
  return StreamStatus(
      e == StreamError::kBadArgument ? Code::kInvalidArgument : Code::kFailedPrecondition, e,
      std::move(m));
}

}  // namespace

Publisher::Publisher(moqt::TrackStore* store, PublisherConfig config)
    : store_(store),
      config_(std::move(config)),
      compat_id_(kvsp::CompatId(config_.descriptor)),
      chain_(kvsp::ChainKey(config_.scope_key, compat_id_), config_.descriptor.block_tokens) {}

Result<std::unique_ptr<Publisher>> Publisher::Create(moqt::TrackStore* store,
                                                     PublisherConfig config,
                                                     std::span<const uint32_t> tokens) {
  if (store == nullptr) return Bad(StreamError::kBadArgument, "no track store");
  Status valid = kvsp::ValidateDescriptor(config.descriptor);
  if (!valid.ok()) return Bad(StreamError::kBadArgument, "descriptor: " + valid.message());
  if (config.encodings.empty()) return Bad(StreamError::kBadArgument, "no encoding offered");
  for (size_t i = 0; i < config.encodings.size(); ++i) {
    KVCS_RETURN_IF_ERROR(CheckEncoding(config.encodings[i]));
    for (size_t j = 0; j < i; ++j) {
      if (config.encodings[i] == config.encodings[j]) {
        return Bad(StreamError::kBadArgument, "an encoding is offered twice");
      }
    }
  }
  if (config.encodings.size() * 2 > profile::kMaxTracksPerSegment) {
    return Bad(StreamError::kBadArgument, "too many encodings for one segment");
  }
  if (config.manifest_every_layers == 0 || config.manifest_every_layers > kMaxManifestInterval) {
    return Bad(StreamError::kBadArgument, "manifest_every_layers must be 1..8");
  }
  std::unique_ptr<Publisher> p(new Publisher(store, std::move(config)));
  if (p->config_.encryption) {
    ObjectEncryption& e = *p->config_.encryption;
    if (e.keyring.size() == 0) e.keyring = secure::ScopeKeyring::FromScopeKey(p->config_.scope_key);
    const uint64_t id = e.key_id.value_or(e.keyring.newest());
    if (e.keyring.Find(id) == nullptr) {
      return Bad(StreamError::kBadArgument,
                 "encryption Key ID " + std::to_string(id) + " is not in the keyring");
    }
    p->sealer_.emplace(e.keyring, e.suite, id);
  }
  const kvsp::Descriptor& d = p->config_.descriptor;
  if (tokens.empty() || tokens.size() % d.block_tokens != 0) {
    return Bad(StreamError::kBadArgument, "segment 0 needs a positive multiple of " +
                                              std::to_string(d.block_tokens) + " tokens, got " +
                                              std::to_string(tokens.size()));
  }
  p->ns_.scope_id = kvsp::ScopeId(p->config_.scope_key);
  p->ns_.compat_id = p->compat_id_;
  p->ns_.pub_id = p->config_.pub_id ? *p->config_.pub_id : profile::NewPubId();
  // The Anchor Key is the last Block Key of segment 0: computed ahead of the segment's tracks.
  {
    kvsp::BlockKeyChain probe(kvsp::ChainKey(p->config_.scope_key, p->compat_id_), d.block_tokens);
    std::vector<Digest> keys;
    probe.Extend(tokens, &keys);
    p->ns_.anchor_key = keys.back();
  }
  moqt::TrackOptions mo;
  mo.publisher_priority = profile::kManifestPublisherPriority;
  mo.max_bytes = kManifestBytesKept;  // and the default group bound: every version that fits
  auto mt = store->CreateTrack(
      {p->track_namespace(), std::string(p->config_.producer_key ? profile::kManifestCoseTrack
                                                                 : profile::kManifestTrack)},
      mo);
  if (!mt.ok()) return mt.status();
  p->manifest_track_ = *mt;
  p->manifest_.compat = d;
  p->manifest_.layers = d.layers;
  p->manifest_.block_tokens = d.block_tokens;
  p->manifest_.deterministic = p->config_.deterministic;
  KVCS_RETURN_IF_ERROR(p->StartSegment(tokens));
  return p;
}

std::vector<moqt::FullTrackName> Publisher::track_names() const {
  std::vector<moqt::FullTrackName> names;
  if (manifest_track_) names.push_back(manifest_track_->name());
  for (const SegmentTracks& st : segments_) {
    for (const auto& t : st.tracks) names.push_back(t->name());
  }
  return names;
}

Status Publisher::Close() {
  if (closed()) return Bad(StreamError::kPublicationEnded, "the publication is already closed");
  return manifest_track_->EndTrack();
}

Status Publisher::AddSegment(std::span<const uint32_t> tokens) {
  if (closed()) return Bad(StreamError::kPublicationEnded, "the publication is closed");
  if (!segment_complete()) {
    return Bad(StreamError::kSegmentOpen, "segment " + std::to_string(segment()) +
                                              " has not completed (next layer " +
                                              std::to_string(next_layer_) + ")");
  }
  const uint32_t b = config_.descriptor.block_tokens;
  if (tokens.empty() || tokens.size() % b != 0) {
    return Bad(StreamError::kBadArgument,
               "a segment needs a positive multiple of " + std::to_string(b) + " tokens");
  }
  return StartSegment(tokens);
}

Status Publisher::StartSegment(std::span<const uint32_t> tokens) {
  const kvsp::Descriptor& d = config_.descriptor;
  const uint32_t s = static_cast<uint32_t>(segments_.size());
  std::vector<Digest> keys;
  chain_.Extend(tokens, &keys);  // continues the chain of the earlier segments
  profile::ManifestSegment ms;
  ms.segment = s;
  ms.first_block = manifest_.segments.empty()
                       ? 0
                       : manifest_.segments.back().first_block + manifest_.segments.back().blocks;
  ms.blocks = keys.size();
  ms.block_keys_sha256 = profile::BlockKeysSha256(keys);
  ms.object_digests.emplace();
  SegmentTracks st;
  for (const Encoding& e : config_.encodings) {
    for (profile::TrackName& t : EncodingTracks(e, s)) {
      moqt::TrackOptions o;
      auto prio = profile::DataPublisherPriority(0, d.layers);
      o.publisher_priority = prio.ok() ? *prio : 0;
      o.max_groups = d.layers + 1;
      o.max_bytes = config_.max_track_bytes;
      auto track = store_->CreateTrack({track_namespace(), profile::FormatTrackName(t)}, o);
      if (!track.ok()) return track.status();
      ms.tracks.push_back(t);
      (*ms.object_digests)[profile::FormatTrackName(t)] = {};
      st.names.push_back(std::move(t));
      st.tracks.push_back(*track);
      st.encoding_of.push_back(e);
    }
  }
  manifest_.segments.push_back(std::move(ms));
  segments_.push_back(std::move(st));
  next_layer_ = 0;
  next_block_ = 0;
  layer_digests_.assign(segments_.back().tracks.size(), {});
  layers_since_manifest_ = 0;
  return PublishManifest();
}

Status Publisher::PublishBlock(uint32_t layer, uint64_t block, ByteSpan raw_k, ByteSpan raw_v) {
  const kvsp::Descriptor& d = config_.descriptor;
  if (closed()) return Bad(StreamError::kPublicationEnded, "the publication is closed");
  if (segment_complete()) {
    return Bad(StreamError::kPublicationEnded,
               "segment " + std::to_string(segment()) + " is complete; AddSegment first");
  }
  if (layer != next_layer_ || block != next_block_) {
    return Bad(StreamError::kOutOfOrder, "expected layer " + std::to_string(next_layer_) +
                                             " block " + std::to_string(next_block_) + ", got " +
                                             std::to_string(layer) + "/" + std::to_string(block));
  }
  if (raw_k.size() != kvsp::KSectionBytes(d) || raw_v.size() != kvsp::VSectionBytes(d)) {
    return Bad(StreamError::kBadArgument, "K/V sections must be " +
                                              std::to_string(kvsp::KSectionBytes(d)) + "/" +
                                              std::to_string(kvsp::VSectionBytes(d)) + " bytes");
  }
  const profile::ManifestSegment& ms = manifest_.segments.back();
  SegmentTracks& st = segments_.back();
  auto prio = profile::DataPublisherPriority(layer, d.layers);
  if (!prio.ok()) return prio.status();
  for (size_t i = 0; i < st.tracks.size(); ++i) {
    const profile::TrackName& name = st.names[i];
    KVCS_ASSIGN_OR_RETURN(Bytes data,
                          EncodeData(d, st.encoding_of[i].codec, name.component, raw_k, raw_v));
    profile::ObjectInfo info;
    info.component = name.component;
    info.layer = layer;
    info.block_index = static_cast<uint32_t>(block);
    info.token_start = (ms.first_block + block) * d.block_tokens;
    info.token_count = d.block_tokens;
    info.codec = kvsp::CodecValue(st.encoding_of[i].codec);
    // One SHA-256 of Data, for both the object's header and the manifest.
    const Digest data_sha256 = Sha256::Hash(data);
    KVCS_ASSIGN_OR_RETURN(Bytes payload, profile::EncodeObjectWithDigest(info, data, data_sha256));
    layer_digests_[i].push_back(data_sha256);
    moqt::PublishedObject o;
    o.location = {layer, block};
    o.publisher_priority = *prio;
    KVCS_RETURN_IF_ERROR(Protect(*st.tracks[i], {layer, block, *prio}, &payload, &o.properties));
    o.payload = std::make_shared<const Bytes>(std::move(payload));
    KVCS_RETURN_IF_ERROR(st.tracks[i]->AddObject(std::move(o)));
  }
  ++next_block_;
  if (next_block_ == ms.blocks) return EndLayer();
  return Status::Ok();
}

Status Publisher::PublishLayer(uint32_t layer, ByteSpan k, ByteSpan v) {
  const kvsp::Descriptor& d = config_.descriptor;
  const uint64_t kb = kvsp::KSectionBytes(d), vb = kvsp::VSectionBytes(d);
  const uint64_t n = segment_complete() ? 0 : segment_blocks();
  if (k.size() != n * kb || v.size() != n * vb) {
    return Bad(StreamError::kBadArgument,
               "layer " + std::to_string(layer) + ": K/V must be " + std::to_string(n * kb) + "/" +
                   std::to_string(n * vb) + " bytes for " + std::to_string(n) + " blocks");
  }
  if (next_block_ != 0) {
    return Bad(StreamError::kOutOfOrder,
               "layer " + std::to_string(next_layer_) + " is partly published block by block");
  }
  for (uint64_t b = 0; b < n; ++b) {
    KVCS_RETURN_IF_ERROR(PublishBlock(layer, b, k.subspan(b * kb, kb), v.subspan(b * vb, vb)));
  }
  return Status::Ok();
}

Status Publisher::EndLayer() {
  const kvsp::Descriptor& d = config_.descriptor;
  profile::ManifestSegment& ms = manifest_.segments.back();
  SegmentTracks& st = segments_.back();
  for (size_t i = 0; i < st.tracks.size(); ++i) {
    moqt::PublishedObject eog;
    eog.location = {next_layer_, ms.blocks};
    eog.publisher_priority = *profile::DataPublisherPriority(next_layer_, d.layers);
    eog.status = moqt::ObjectStatus::kEndOfGroup;
    KVCS_RETURN_IF_ERROR(st.tracks[i]->AddObject(std::move(eog)));
    (*ms.object_digests)[profile::FormatTrackName(st.names[i])].push_back(
        std::move(layer_digests_[i]));
    layer_digests_[i].clear();
  }
  ++next_layer_;
  next_block_ = 0;
  ++layers_since_manifest_;
  if (next_layer_ == d.layers) {
    for (auto& t : st.tracks) {
      moqt::PublishedObject eot;
      eot.location = {d.layers, 0};  // its own group, as Track::EndTrack places it
      eot.publisher_priority = 127;
      eot.status = moqt::ObjectStatus::kEndOfTrack;
      KVCS_RETURN_IF_ERROR(t->AddObject(std::move(eot)));
    }
    ms.complete = true;
    return PublishManifest();
  }
  if (layers_since_manifest_ >= config_.manifest_every_layers) return PublishManifest();
  return Status::Ok();
}

Status Publisher::PublishManifest() {
  Bytes payload;
  if (config_.producer_key) {
    KVCS_ASSIGN_OR_RETURN(payload, profile::SignManifestCose(manifest_, *config_.producer_key));
  } else {
    KVCS_ASSIGN_OR_RETURN(std::string json, profile::ManifestToJson(manifest_));
    payload.assign(json.begin(), json.end());
  }
  moqt::Properties properties;
  KVCS_RETURN_IF_ERROR(Protect(*manifest_track_,
                               {manifest_group_, 0, manifest_track_->options().publisher_priority},
                               &payload, &properties));
  KVCS_RETURN_IF_ERROR(manifest_track_->StartGroup(manifest_group_));
  auto loc = manifest_track_->AppendObject(std::move(payload), std::move(properties));
  if (!loc.ok()) return loc.status();
  KVCS_RETURN_IF_ERROR(manifest_track_->EndGroup());
  ++manifest_group_;
  layers_since_manifest_ = 0;
  return Status::Ok();
}

Status Publisher::Protect(const moqt::Track& track, const secure::ObjectPosition& pos,
                          Bytes* payload, moqt::Properties* properties) {
  if (!sealer_) return Status::Ok();
  KVCS_ASSIGN_OR_RETURN(secure::ObjectSealer::Sealed s, sealer_->Seal(track.name(), pos, *payload));
  *payload = std::move(s.payload);
  *properties = std::move(s.properties);
  return Status::Ok();
}

Status Publisher::RotateKey(uint64_t key_id, ByteSpan secret) {
  if (!sealer_) return Bad(StreamError::kBadArgument, "the publication is not encrypted");
  if (!secret.empty()) {
    Status s = sealer_->AddKey(key_id, secret);
    if (!s.ok()) return Bad(StreamError::kBadArgument, s.message());
  }
  Status s = sealer_->SetKeyId(key_id);
  if (!s.ok()) return Bad(StreamError::kBadArgument, s.message());
  return Status::Ok();
}

}  // namespace kvcs::stream
