// LoadJob's MOQT path: a kvcs_stream Retrieval of the publication serving the load's blocks, on
// the client's MoqtLink thread; each verified layer is written into the engine's buffers there.
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "engine/load_job.h"
#include "engine/moqt_link.h"
#include "kvcs_stream/cache_identity.h"
#include "kvcs_stream/retrieval.h"

namespace kvcs::engine {
namespace {

// The retrieval's floor (RetrievalOptions::min_deadline_ms, above the recompute bound from the
// engine's compute cost): a fixed part plus the load's bytes at a slow rate, so that a large load
// on a busy host is not cut short and a small one that lacks an object ends soon.
constexpr uint64_t kFloorFixedMs = 2000;
constexpr uint64_t kFloorBytesPerMs = 50'000;  // 50 MB/s

uint64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// Link thread only.
struct LoadJob::Moqt {
  std::unique_ptr<stream::Retrieval> retrieval;
  uint64_t ticker = 0;
  std::vector<std::vector<bool>> got;  // [layer][block index]: written
  profile::Namespace ns;
};

Status LoadJob::StartMoqt(std::span<const uint32_t> tokens) {
  MoqtLink* link = client_->moqt();
  const kvsp::Descriptor& d = client_->descriptor();
  const size_t blocks = first_block_ + keys_.size();
  auto identity = stream::CacheIdentity::Compute(d, client_->options().scope_key,
                                                 tokens.subspan(0, blocks * d.block_tokens));
  if (!identity.ok()) return identity.status();
  auto found = link->FindPublication(*identity, blocks);
  if (!found.ok()) {
    return EngineStatus(Code::kUnavailable, EngineError::kTransport,
                        "load: " + found.status().message());
  }
  moqt_ = std::make_shared<Moqt>();
  moqt_->got.assign(layers_.size(), std::vector<bool>(keys_.size(), false));
  if (!*found) {
    FailRemaining(EngineStatus(
        Code::kNotFound, EngineError::kBlocksFailed,
        "no publication at the relay serves the load's " + std::to_string(blocks) + " blocks"));
    return Status::Ok();
  }
  const LinkPublication p = **found;
  moqt_->ns = p.ns;
  stream::RetrievalOptions o;
  // Live takes a live and a completed publication alike; one known ended (this client's own) is
  // fetched, which ends as soon as the relay sent what it has.
  o.mode = p.complete ? stream::RetrievalMode::kCompleted : stream::RetrievalMode::kLive;
  o.verifier.identity = std::move(*identity);
  o.verifier.publication = p.ns;
  o.verifier.require_signature = link->producer_key().has_value();
  o.verifier.max_blocks = blocks;
  // A publication this client made of a longer prompt: its first blocks are ours (we computed
  // its Block Keys), though block_keys_sha256 covers more than this prompt.
  o.verifier.accept_unconfirmed_prefix = p.anchor_blocks > blocks;
  const uint64_t us = client_->options().compute_us_per_layer;
  o.compute_ns_per_token_layer = us * 1000 / (blocks * d.block_tokens);
  const uint64_t bytes = uint64_t{layers_.size()} * blocks * 2 * client_->shape().section_bytes();
  o.min_deadline_ms = kFloorFixedMs + bytes / kFloorBytesPerMs;
  Status started = link->Call([&]() -> Status {
    o.verifier.keys = &link->keys();
    moqt::MoqtSession* s = link->session();
    if (!s) return Status(Code::kUnavailable, "relay session ended");
    auto r = stream::Retrieval::Start(
        s, std::move(o), [this](const stream::VerifiedLayer& l) { OnMoqtLayer(l); },
        [this](const stream::RetrievalReport& rep) { OnMoqtDone(rep); }, NowMs);
    if (!r.ok()) return r.status();
    if ((*r)->done()) return Status::Ok();  // ended inside Start: OnMoqtDone ran
    moqt_->retrieval = std::move(*r);
    moqt_->ticker = link->AddTicker([this] {
      if (moqt_->retrieval && !moqt_->retrieval->done()) moqt_->retrieval->OnTimer();
    });
    return Status::Ok();
  });
  if (!started.ok()) {
    FailRemaining(EngineStatus(Code::kUnavailable, EngineError::kTransport,
                               "load: retrieval: " + started.message()));
  }
  return Status::Ok();
}

void LoadJob::OnMoqtLayer(const stream::VerifiedLayer& vl) {
  // Held while this layer is written: once Cancel() returned, nothing more is written.
  std::lock_guard<std::mutex> writing(write_mu_);
  if (cancel_.load() || vl.layer >= layers_.size()) return;
  const SectionShape& shape = client_->shape();
  const uint64_t section = shape.section_bytes();
  const LayerTarget& t = layers_[vl.layer];
  std::vector<bool>& got = moqt_->got[vl.layer];
  for (size_t i = 0; i < vl.k.size(); ++i) {
    const uint64_t block = vl.first_block + i;
    if (block < first_block_ || block >= first_block_ + keys_.size()) continue;
    const size_t j = block - first_block_;
    if (vl.k[i].size() != section || i >= vl.v.size() || vl.v[i].size() != section) continue;
    ScatterSection(vl.k[i].data(), layout_, shape, block_ids_[j], t.k);
    ScatterSection(vl.v[i].data(), layout_, shape, block_ids_[j], t.v);
    got[j] = true;
  }
  if (std::all_of(got.begin(), got.end(), [](bool b) { return b; })) {
    CompleteLayer(vl.layer, LayerState{});
  }
}

void LoadJob::OnMoqtDone(const stream::RetrievalReport& rep) {
  if (cancel_.load()) return;  // Cancel's task reports it
  for (uint32_t l = 0; l < layers_.size(); ++l) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (state_[l].done) continue;
    }
    LayerState st;
    std::string why;
    for (uint32_t j = 0; j < keys_.size(); ++j) {
      if (moqt_->got[l][j]) continue;
      st.failed.push_back(j);
      const uint64_t block = first_block_ + j;
      if (why.empty() && block < rep.blocks && l >= rep.first_layer &&
          l < rep.first_layer + rep.layers) {
        const stream::BlockOutcome& o = rep.at(block, l);
        why = "layer " + std::to_string(l) + " block " + std::to_string(j) + ": " +
              std::string(o.source == stream::BlockSource::kRecompute
                              ? stream::StreamErrorName(o.reason)
                              : stream::BlockSourceName(o.source));
      }
    }
    if (why.empty()) why = "not delivered";
    for (const stream::Refusal& r : rep.refusals) {
      why += "; refused " + r.track + " " + std::to_string(r.location.group) + "/" +
             std::to_string(r.location.object) + ": " + r.status.message();
      break;  // the first says enough
    }
    st.status =
        EngineStatus(Code::kCorruption, EngineError::kBlocksFailed,
                     std::to_string(st.failed.size()) + " of " + std::to_string(keys_.size()) +
                         " blocks failed over MOQT (first: " + why + ")");
    CompleteLayer(l, std::move(st));
  }
  if (!rep.all_retrieved()) client_->moqt()->Forget(moqt_->ns);  // may be gone: discover again
  client_->moqt()->RemoveTicker(moqt_->ticker);
  moqt_->ticker = 0;
  // The retrieval may be destroyed from its done callback only after it returned.
  if (moqt_->retrieval) {
    std::shared_ptr<stream::Retrieval> r(std::move(moqt_->retrieval));
    client_->moqt()->Post([r]() mutable { r.reset(); });
  }
}

void LoadJob::StopMoqt() {
  if (!moqt_) return;
  if (moqt_->ticker) client_->moqt()->RemoveTicker(moqt_->ticker);
  moqt_->ticker = 0;
  moqt_->retrieval.reset();
}

}  // namespace kvcs::engine
