// LoadJob's MOQT path: a kvcs_stream Recovery of the publication serving the load's blocks, on
// the client's MoqtLink thread; each verified layer is written into the engine's buffers there,
// then the verified blocks of layers that did not complete, then (with a store) the blocks the
// store's KVSP endpoints recovered.
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "engine/load_job.h"
#include "engine/moqt_link.h"
#include "kvcs_stream/cache_identity.h"
#include "kvcs_stream/recovery.h"
#include "kvsp_http/http_holder_source.h"

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

// The store as the recovery's holder: tells the job when it is first asked (the relay's part
// has ended, so what arrives from then on came from the store).
class StoreHolder : public stream::HolderSource {
 public:
  StoreHolder(std::unique_ptr<kvsp_http::HttpHolderSource> inner, std::function<void()> on_asked)
      : inner_(std::move(inner)), on_asked_(std::move(on_asked)) {}
  std::string name() const override { return inner_->name(); }
  void Fetch(const stream::CacheIdentity& identity, std::vector<stream::HolderFetch> blocks,
             uint64_t timeout_ms, Done done) override {
    on_asked_();
    inner_->Fetch(identity, std::move(blocks), timeout_ms, std::move(done));
  }
  void Cancel() override { inner_->Cancel(); }

 private:
  std::unique_ptr<kvsp_http::HttpHolderSource> inner_;
  std::function<void()> on_asked_;
};

}  // namespace

// Link thread only.
struct LoadJob::Moqt {
  std::unique_ptr<stream::Recovery> recovery;
  std::unique_ptr<StoreHolder> store;  // outlives `recovery`
  bool recovering = false;             // the store was asked: later layers come from it
  uint64_t ticker = 0;
  std::vector<std::vector<LoadSource>> got;  // [layer][block index]: written, from where
  profile::Namespace ns;
  // Destroys the recovery, then the store holder (its worker joins within its deadline).
  void Reset() {
    recovery.reset();
    store.reset();
  }
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
  moqt_->got.assign(layers_.size(), std::vector<LoadSource>(keys_.size(), LoadSource::kPending));
  if (!*found && client_->has_store()) {
    // No publication at the relay: the store serves the whole load (the HTTP path).
    thread_ = std::thread([this] { Run(); });
    return Status::Ok();
  }
  if (!*found) {
    FailRemaining(EngineStatus(
        Code::kNotFound, EngineError::kBlocksFailed,
        "no publication at the relay serves the load's " + std::to_string(blocks) + " blocks"));
    return Status::Ok();
  }
  const LinkPublication p = **found;
  moqt_->ns = p.ns;
  stream::RecoveryOptions ro;
  stream::RetrievalOptions& o = ro.retrieval;
  // A corrupt or missing object costs its block, not its layer.
  o.deliver_verified_blocks = true;
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
  // With a store, what the relay does not deliver is asked of the store's KVSP endpoints (§8).
  std::unique_ptr<kvsp_http::HolderClient> holder;
  if (client_->has_store()) {
    auto hc = kvsp_http::HolderClient::Create(client_->options().store_url, {});
    if (!hc.ok()) {
      return EngineStatus(Code::kInvalidArgument, EngineError::kTransport,
                          "load: store as recovery source: " + hc.status().message());
    }
    holder = std::move(*hc);
  }
  Status started = link->Call([&]() -> Status {
    o.verifier.keys = &link->keys();
    moqt::MoqtSession* s = link->session();
    if (!s) return Status(Code::kUnavailable, "relay session ended");
    if (holder) {
      moqt_->store = std::make_unique<StoreHolder>(
          std::make_unique<kvsp_http::HttpHolderSource>(
              std::move(holder), [link](std::function<void()> fn) { link->Post(std::move(fn)); }),
          [this] { OnMoqtRecovering(); });
      ro.holders = {moqt_->store.get()};
    }
    auto r = stream::Recovery::Start(
        s, std::move(ro), [this](const stream::VerifiedLayer& l) { OnMoqtLayer(l); },
        [this](const stream::RetrievalReport& rep) { OnMoqtDone(rep); }, NowMs);
    if (!r.ok()) return r.status();
    if ((*r)->done()) return Status::Ok();  // ended inside Start: OnMoqtDone ran
    moqt_->recovery = std::move(*r);
    moqt_->ticker = link->AddTicker([this] {
      if (moqt_->recovery && !moqt_->recovery->done()) moqt_->recovery->OnTimer();
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
  std::vector<LoadSource>& got = moqt_->got[vl.layer];
  const LoadSource from = moqt_->recovering ? LoadSource::kStore : LoadSource::kRelay;
  for (size_t i = 0; i < vl.k.size(); ++i) {
    const uint64_t block = vl.first_block + i;
    if (block < first_block_ || block >= first_block_ + keys_.size()) continue;
    const size_t j = block - first_block_;
    if (vl.k[i].size() != section || i >= vl.v.size() || vl.v[i].size() != section) continue;
    ScatterSection(vl.k[i].data(), layout_, shape, block_ids_[j], t.k);
    ScatterSection(vl.v[i].data(), layout_, shape, block_ids_[j], t.v);
    if (got[j] == LoadSource::kPending) got[j] = from;
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (state_[vl.layer].done) return;
  }
  if (std::none_of(got.begin(), got.end(),
                   [](LoadSource s) { return s == LoadSource::kPending; })) {
    LayerState st;
    st.sources = got;
    CompleteLayer(vl.layer, std::move(st));
  }
}

void LoadJob::OnMoqtRecovering() { moqt_->recovering = true; }

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
      if (moqt_->got[l][j] != LoadSource::kPending) continue;
      moqt_->got[l][j] = LoadSource::kRecompute;
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
                         " blocks failed over MOQT" + (moqt_->store ? " and from the store" : "") +
                         " (first: " + why + ")");
    st.sources = moqt_->got[l];
    CompleteLayer(l, std::move(st));
  }
  if (!rep.all_retrieved()) client_->moqt()->Forget(moqt_->ns);  // may be gone: discover again
  client_->moqt()->RemoveTicker(moqt_->ticker);
  moqt_->ticker = 0;
  // The recovery may be destroyed from its done callback only after it returned; the store
  // holder after it.
  if (moqt_->recovery || moqt_->store) {
    auto gone = std::make_shared<Moqt>();
    gone->recovery = std::move(moqt_->recovery);
    gone->store = std::move(moqt_->store);
    client_->moqt()->Post([gone]() mutable { gone->Reset(); });
  }
}

void LoadJob::StopMoqt() {
  if (!moqt_) return;
  if (moqt_->ticker) client_->moqt()->RemoveTicker(moqt_->ticker);
  moqt_->ticker = 0;
  moqt_->Reset();
}

}  // namespace kvcs::engine
