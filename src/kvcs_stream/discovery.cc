#include "kvcs_stream/discovery.h"

#include <algorithm>
#include <utility>

#include "kvcs_stream/stream_error.h"

namespace kvcs::stream {

// One SUBSCRIBE_NAMESPACE of one prefix.
struct Discovery::Probe : moqt::NamespaceVisitor {
  Discovery* owner = nullptr;  // null once the Discovery is gone or the probe ended
  uint64_t blocks = 0;
  moqt::TrackNamespace prefix;
  uint64_t id = 0;
  bool answered = false;
  bool closed = false;

  void OnRequestOk() override {
    if (owner != nullptr) owner->OnAnswered(*this, std::nullopt);
  }
  void OnNamespace(const moqt::TrackNamespace& suffix) override {
    if (owner != nullptr) owner->OnNamespace(*this, suffix);
  }
  void OnNamespaceDone(const moqt::TrackNamespace&) override {}
  void OnClosed(const std::optional<moqt::RequestError>& error) override {
    closed = true;
    if (owner != nullptr && !answered) owner->OnAnswered(*this, error);
  }
};

Discovery::Discovery(moqt::MoqtSession* session, const CacheIdentity& identity,
                     DiscoveryOptions options, DoneCallback on_done,
                     std::function<uint64_t()> clock_ms)
    : session_(session),
      identity_(identity),
      options_(options),
      on_done_(std::move(on_done)),
      clock_ms_(std::move(clock_ms)) {}

Discovery::~Discovery() { EndBatch(); }

Result<std::unique_ptr<Discovery>> Discovery::Start(moqt::MoqtSession* session,
                                                    const CacheIdentity& identity,
                                                    DiscoveryOptions options, DoneCallback on_done,
                                                    std::function<uint64_t()> clock_ms) {
  uint64_t hi =
      options.max_blocks == 0 ? identity.blocks() : std::min(options.max_blocks, identity.blocks());
  uint64_t lo = std::max<uint64_t>(options.min_blocks, 1);
  if (hi < lo) {
    return StreamStatus(Code::kInvalidArgument, StreamError::kBadArgument,
                        "the prompt has " + std::to_string(identity.blocks()) +
                            " full blocks; discovery needs at least " + std::to_string(lo));
  }
  options.min_blocks = lo;
  options.window = std::max<size_t>(options.window, 1);
  std::unique_ptr<Discovery> d(
      new Discovery(session, identity, options, std::move(on_done), std::move(clock_ms)));
  d->next_blocks_ = hi;
  d->deadline_ms_ = d->clock_ms_() + options.timeout_ms;
  Status s = d->StartBatch();
  if (!s.ok()) return s;
  return d;
}

Status Discovery::StartBatch() {
  size_t n = 0;
  while (next_blocks_ >= options_.min_blocks && n < options_.window) {
    auto p = std::make_shared<Probe>();
    p->owner = this;
    p->blocks = next_blocks_;
    p->prefix = identity_.AnchorPrefix(next_blocks_);
    auto id = session_->SubscribeNamespace(p->prefix, p);
    if (!id.ok()) {
      p->owner = nullptr;
      if (batch_.empty()) return id.status();
      break;  // what is in flight settles; the rest is tried in the next batch
    }
    p->id = *id;
    batch_.push_back(std::move(p));
    ++result_.prefixes_tried;
    --next_blocks_;
    ++n;
  }
  last_answer_ms_ = clock_ms_();
  return Status::Ok();
}

void Discovery::EndBatch() {
  for (auto& p : batch_) {
    if (p->owner == nullptr) continue;
    p->owner = nullptr;
    if (!p->closed && !session_->closed()) (void)session_->UnsubscribeNamespace(p->id);
  }
  batch_.clear();
}

void Discovery::OnAnswered(Probe& p, const std::optional<moqt::RequestError>& error) {
  p.answered = true;
  last_answer_ms_ = clock_ms_();
  if (error.has_value() && result_.refusals.size() < 64) {
    result_.refusals.push_back(StreamStatus(Code::kUnavailable, StreamError::kRequestRefused,
                                            "SUBSCRIBE_NAMESPACE of the " +
                                                std::to_string(p.blocks) +
                                                "-block prefix: " + error->reason));
  }
}

void Discovery::OnNamespace(Probe& p, const moqt::TrackNamespace& suffix) {
  moqt::TrackNamespace full = p.prefix;
  full.insert(full.end(), suffix.begin(), suffix.end());
  auto ns = FromMoqtNamespace(full);
  if (!ns.ok()) {
    if (result_.refusals.size() < 64) result_.refusals.push_back(ns.status());
    return;
  }
  auto& list = found_[p.blocks];
  for (const FoundPublication& f : list) {
    if (f.ns == *ns) return;
  }
  list.push_back(FoundPublication{*ns, p.blocks});
}

void Discovery::OnTimer() {
  if (done_) return;
  uint64_t now = clock_ms_();
  if (now >= deadline_ms_) {
    result_.timed_out = true;
    Finish();
    return;
  }
  for (const auto& p : batch_) {
    if (!p->answered) return;
  }
  if (now < last_answer_ms_ + options_.settle_ms) return;
  EndBatch();
  if (!found_.empty() || next_blocks_ < options_.min_blocks) {
    Finish();
    return;
  }
  if (!StartBatch().ok()) Finish();
}

void Discovery::Finish() {
  if (done_) return;
  done_ = true;
  EndBatch();
  if (!found_.empty()) result_.publications = found_.rbegin()->second;
  if (on_done_) {
    DoneCallback cb = std::move(on_done_);
    cb(result_);  // may destroy this
  }
}

}  // namespace kvcs::stream
