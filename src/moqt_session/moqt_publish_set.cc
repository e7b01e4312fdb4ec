// PublishSet: PUBLISH a set of tracks and follow them to the end (moqt_publish_set.h).
#include "moqt_session/moqt_publish_set.h"

namespace kvcs::moqt {

struct PublishSet::State {
  void Done() {
    if (pending > 0) --pending;
    if (pending == 0 && when_done) {
      auto cb = std::move(when_done);
      when_done = nullptr;
      cb();
    }
  }
  size_t pending = 0;
  size_t delivered = 0;
  std::vector<std::pair<FullTrackName, std::optional<RequestError>>> failed;
  std::function<void()> when_done;
};

namespace {

class Follower : public PublishVisitor {
 public:
  Follower(FullTrackName name,
           std::function<void(bool, const FullTrackName&, const std::optional<RequestError>&)> end)
      : name_(std::move(name)), end_(std::move(end)) {}
  void OnPublishResult(const std::optional<RequestError>& error) override { error_ = error; }
  void OnPublishDone(bool delivered) override {
    const bool held =
        error_ && error_->error_code == static_cast<uint64_t>(RequestErrorCode::kUninterested);
    end_(delivered || held, name_, error_);
  }

 private:
  FullTrackName name_;
  std::optional<RequestError> error_;
  std::function<void(bool, const FullTrackName&, const std::optional<RequestError>&)> end_;
};

}  // namespace

PublishSet::PublishSet(MoqtSession* session, std::vector<AuthToken> auth_tokens)
    : session_(session), tokens_(std::move(auth_tokens)), state_(std::make_shared<State>()) {}

Status PublishSet::Publish(const std::vector<FullTrackName>& names) {
  for (const FullTrackName& n : names) {
    if (!published_.insert({n.track_namespace, n.name}).second) continue;
    std::weak_ptr<State> weak = state_;
    auto follower = std::make_shared<Follower>(
        n, [weak](bool ok, const FullTrackName& name, const std::optional<RequestError>& e) {
          auto s = weak.lock();
          if (!s) return;
          if (ok) {
            ++s->delivered;
          } else {
            s->failed.push_back({name, e});
          }
          s->Done();
        });
    PublishOptions o;
    o.auth_tokens = tokens_;
    ++state_->pending;
    Result<uint64_t> id = session_->PublishTrack(n, o, follower);
    if (!id.ok()) {
      --state_->pending;
      published_.erase({n.track_namespace, n.name});
      return id.status();
    }
  }
  return Status::Ok();
}

size_t PublishSet::pending() const { return state_->pending; }
size_t PublishSet::delivered() const { return state_->delivered; }
const std::vector<std::pair<FullTrackName, std::optional<RequestError>>>& PublishSet::failed()
    const {
  return state_->failed;
}

void PublishSet::WhenDone(std::function<void()> done) {
  if (state_->pending == 0) {
    done();
    return;
  }
  state_->when_done = std::move(done);
}

}  // namespace kvcs::moqt
