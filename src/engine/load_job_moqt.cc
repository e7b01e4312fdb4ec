// LoadJob's MOQT path: a kvcs_stream Recovery of the publication serving the load's blocks, on
// the client's MoqtLink thread; each verified layer is written into the engine's buffers there,
// then the verified blocks of layers that did not complete, then what the recovery sources (the
// store's KVSP endpoints, then the KVSP HTTP holders the index lists) recovered; all within the
// load's deadline (load_deadline.h), past which the rest is reported for recompute.
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "engine/load_deadline.h"
#include "engine/load_job.h"
#include "engine/moqt_link.h"
#include "kvcs_stream/cache_identity.h"
#include "kvcs_stream/recovery.h"
#include "kvsp_http/http_holder_source.h"

namespace kvcs::engine {
namespace {

uint64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A recovery source (the store's KVSP endpoints, or a holder the index listed) that tells the job
// when it is asked: the Recovery asks one at a time, after the relay's part ended, and hands over
// what it delivered before asking the next, so what arrives from then on came from it.
class TaggedHolder : public stream::HolderSource {
 public:
  TaggedHolder(std::unique_ptr<kvsp_http::HttpHolderSource> inner, LoadSource tag,
               std::function<void(LoadSource)> on_asked)
      : inner_(std::move(inner)), tag_(tag), on_asked_(std::move(on_asked)) {}
  std::string name() const override { return inner_->name(); }
  void Fetch(const stream::CacheIdentity& identity, std::vector<stream::HolderFetch> blocks,
             uint64_t timeout_ms, Done done) override {
    on_asked_(tag_);
    inner_->Fetch(identity, std::move(blocks), timeout_ms, std::move(done));
  }
  void Cancel() override { inner_->Cancel(); }

 private:
  std::unique_ptr<kvsp_http::HttpHolderSource> inner_;
  LoadSource tag_;
  std::function<void(LoadSource)> on_asked_;
};

}  // namespace

// Link thread only.
struct LoadJob::Moqt {
  std::unique_ptr<stream::Recovery> recovery;
  std::vector<std::unique_ptr<TaggedHolder>> holders;  // outlive `recovery`; the store first
  bool has_store = false;                              // holders[0] is the store
  LoadSource from = LoadSource::kRelay;                // where layers handed over now come from
  uint64_t deadline_ms = 0;                            // after the start (load_deadline.h)
  bool priced = false;                                 // the deadline is the recompute cost
  uint64_t ticker = 0;
  std::vector<std::vector<LoadSource>> got;  // [layer][block index]: written, from where
  profile::Namespace ns;
  // Destroys the recovery, then the holders (their workers join within their deadlines).
  void Reset() {
    recovery.reset();
    holders.clear();
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
    // No publication at the relay: the store serves the whole load (the HTTP path), measured as
    // the store's.
    path_ = client_->StorePath();
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
  // Each segment as its manifest says: a completed one is fetched (which ends as soon as the
  // relay sent it), one still produced is subscribed, a short fetch continued by a subscription.
  o.mode = stream::RetrievalMode::kAuto;
  o.verifier.identity = std::move(*identity);
  o.verifier.publication = p.ns;
  o.verifier.require_signature = link->producer_key().has_value();
  o.verifier.max_blocks = blocks;
  // A publication this client made of a longer prompt: its first blocks are ours (we computed
  // its Block Keys), though block_keys_sha256 covers more than this prompt.
  o.verifier.accept_unconfirmed_prefix = p.anchor_blocks > blocks;
  // The deadline (load_deadline.h), as the recovery's floor with no compute cost of its own: the
  // whole recovery, primary and sources, ends by then.
  const uint64_t ns = client_->options().recompute_ns_per_token_layer;
  const uint64_t bytes = LoadBytes();
  moqt_->deadline_ms = MoqtLoadDeadlineMs(keys_.size(), d.block_tokens,
                                          static_cast<uint32_t>(layers_.size()), ns, bytes);
  moqt_->priced = ns != 0;
  o.compute_ns_per_token_layer = 0;
  o.min_deadline_ms = moqt_->deadline_ms;
  // What the relay does not deliver is asked of the store's KVSP endpoints (§8), then of the
  // holders the index lists for the load's blocks.
  std::vector<std::pair<std::unique_ptr<kvsp_http::HolderClient>, LoadSource>> sources;
  if (client_->has_store()) {
    auto hc = kvsp_http::HolderClient::Create(
        client_->options().store_url,
        {client_->options().store_ca_file, client_->options().store_insecure});
    if (!hc.ok()) {
      return EngineStatus(Code::kInvalidArgument, EngineError::kTransport,
                          "load: store as recovery source: " + hc.status().message());
    }
    sources.emplace_back(std::move(*hc), LoadSource::kStore);
    moqt_->has_store = true;
  }
  for (const std::string& h :
       client_->IndexHolders(tokens.subspan(0, blocks * d.block_tokens), first_block_)) {
    auto hc = kvsp_http::HolderClient::Create(h, {});
    if (hc.ok()) sources.emplace_back(std::move(*hc), LoadSource::kHolder);  // else not usable
  }
  Status started = link->Call([&]() -> Status {
    o.verifier.keys = &link->keys();
    moqt::MoqtSession* s = link->session();
    if (!s) return Status(Code::kUnavailable, "relay session ended");
    for (auto& [hc, tag] : sources) {
      moqt_->holders.push_back(std::make_unique<TaggedHolder>(
          std::make_unique<kvsp_http::HttpHolderSource>(
              std::move(hc), [link](std::function<void()> fn) { link->Post(std::move(fn)); }),
          tag, [this](LoadSource from) { OnMoqtRecovering(from); }));
      ro.holders.push_back(moqt_->holders.back().get());
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
  const LoadSource from = moqt_->from;
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
    bool last = false;
    {
      std::lock_guard<std::mutex> lk(mu_);
      last =
          std::count_if(state_.begin(), state_.end(), [](const LayerState& s) { return s.done; }) +
              1 ==
          static_cast<std::ptrdiff_t>(state_.size());
    }
    if (last) RecordDelivery(BlockBytes(keys_.size()));
    LayerState st;
    st.sources = got;
    CompleteLayer(vl.layer, std::move(st));
  }
}

void LoadJob::OnMoqtRecovering(LoadSource from) { moqt_->from = from; }

void LoadJob::OnMoqtDone(const stream::RetrievalReport& rep) {
  if (cancel_.load()) return;  // Cancel's task reports it
  // What the layers completed below hold, recorded before they complete.
  uint64_t completing = 0;
  for (uint32_t l = 0; l < layers_.size(); ++l) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (state_[l].done) continue;
    }
    completing += BlockBytes(std::count_if(moqt_->got[l].begin(), moqt_->got[l].end(),
                                           [](LoadSource s) { return s != LoadSource::kPending; }));
  }
  RecordDelivery(completing);
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
    if (rep.timed_out) {
      why = "deadline of " + std::to_string(moqt_->deadline_ms) + " ms passed (" +
            (moqt_->priced ? "recomputing the loaded prefix would take that long"
                           : "no recompute cost: 2 s + the load's bytes at 10 MB/s") +
            "); " + why;
    }
    for (const stream::Refusal& r : rep.refusals) {
      why += "; refused " + r.track + " " + std::to_string(r.location.group) + "/" +
             std::to_string(r.location.object) + ": " + r.status.message();
      break;  // the first says enough
    }
    st.status = EngineStatus(Code::kCorruption, EngineError::kBlocksFailed,
                             std::to_string(st.failed.size()) + " of " +
                                 std::to_string(keys_.size()) + " blocks failed over MOQT" +
                                 RecoverySourcesText() + " (first: " + why + ")");
    st.sources = moqt_->got[l];
    CompleteLayer(l, std::move(st));
  }
  if (!rep.all_retrieved()) client_->moqt()->Forget(moqt_->ns);  // may be gone: discover again
  client_->moqt()->RemoveTicker(moqt_->ticker);
  moqt_->ticker = 0;
  // The recovery may be destroyed from its done callback only after it returned; the holders
  // after it.
  if (moqt_->recovery || !moqt_->holders.empty()) {
    auto gone = std::make_shared<Moqt>();
    gone->recovery = std::move(moqt_->recovery);
    gone->holders = std::move(moqt_->holders);
    client_->moqt()->Post([gone]() mutable { gone->Reset(); });
  }
}

std::string LoadJob::RecoverySourcesText() const {
  const size_t store = moqt_->has_store ? 1 : 0;
  const size_t n = moqt_->holders.size() > store ? moqt_->holders.size() - store : 0;
  std::string out = moqt_->has_store ? " and from the store" : "";
  if (n > 0) {
    out += (out.empty() ? " and from " : " and ") + std::to_string(n) + " index holder" +
           (n == 1 ? "" : "s");
  }
  return out;
}

void LoadJob::StopMoqt() {
  if (!moqt_) return;
  if (moqt_->ticker) client_->moqt()->RemoveTicker(moqt_->ticker);
  moqt_->ticker = 0;
  moqt_->Reset();
}

}  // namespace kvcs::engine
