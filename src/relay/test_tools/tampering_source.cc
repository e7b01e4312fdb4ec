// A relay that alters objects before serving them, for tests (tampering_source.h).
#include "relay/test_tools/tampering_source.h"

#include <utility>

namespace kvcs::relay::test {

TamperingSource::TamperingSource(moqt::TrackSource* inner, Tamper tamper, Drop drop)
    : inner_(inner), tamper_(std::move(tamper)), drop_(std::move(drop)) {}

TamperingSource::~TamperingSource() {
  for (auto& [name, w] : waiting_) w->inner->RemoveListener(w.get());
  for (auto& [name, c] : copies_) c->inner->RemoveListener(c.get());
}

std::shared_ptr<moqt::Track> TamperingSource::FindTrack(const moqt::FullTrackName& name) {
  auto c = copies_.find(name);
  if (c != copies_.end()) return c->second->copy;
  auto t = inner_->FindTrack(name);
  return t != nullptr && Settled(*t) ? CopyOf(t) : nullptr;
}

bool TamperingSource::Settled(const moqt::Track& t) {
  if (t.failure()) return true;
  auto largest = t.largest();
  return largest.has_value() && t.KnownThrough(*largest);
}

std::shared_ptr<moqt::Track> TamperingSource::CopyOf(const std::shared_ptr<moqt::Track>& inner) {
  auto& c = copies_[inner->name()];
  if (c) return c->copy;
  c = std::make_unique<Copy>();
  c->owner = this;
  c->inner = inner;
  moqt::TrackOptions o = inner->options();
  o.budget = nullptr;
  o.keep_whole = false;
  c->copy = std::make_shared<moqt::Track>(inner->name(), std::move(o));
  for (auto g = inner->NextGroup(std::nullopt, moqt::GroupOrder::kAscending); g;
       g = inner->NextGroup(*g, moqt::GroupOrder::kAscending)) {
    for (const moqt::PublishedObject* p = inner->NextInGroup(*g, 0); p != nullptr;
         p = inner->NextInGroup(*g, p->location.object + 1)) {
      Add(*inner, *p, *c->copy);
    }
  }
  inner->AddListener(c.get());  // what it gets from now on
  return c->copy;
}

void TamperingSource::Add(const moqt::Track& inner, const moqt::PublishedObject& object,
                          moqt::Track& copy) {
  moqt::PublishedObject c = object;
  if (c.status == moqt::ObjectStatus::kNormal) {
    if (drop_ && drop_(inner, c)) {
      ++dropped_;
      return;
    }
    if (tamper_) tamper_(inner, c);
    if (c.payload != object.payload || c.properties != object.properties) ++altered_;
  }
  (void)copy.InsertObject(std::move(c));  // any order within a group, as the inner track gets it
}

void TamperingSource::ResolveTrack(const moqt::TrackQuery& query, moqt::TrackResolved done) {
  auto c = copies_.find(query.name);
  if (c != copies_.end()) {
    done(moqt::TrackResolution{c->second->copy});
    return;
  }
  auto w = waiting_.find(query.name);
  if (w != waiting_.end()) {
    w->second->done.push_back(std::move(done));
    return;
  }
  inner_->ResolveTrack(query, [this, done = std::move(done)](moqt::TrackResolution r) mutable {
    if (r.track == nullptr) {
      done(std::move(r));
      return;
    }
    auto& slot = waiting_[r.track->name()];
    if (!slot) {
      slot = std::make_unique<Waiting>();
      slot->owner = this;
      slot->inner = r.track;
      r.track->AddListener(slot.get());
    }
    slot->done.push_back(std::move(done));
    slot->Check();
  });
}

void TamperingSource::Waiting::Check() {
  if (Settled(*inner)) owner->Answer(this);
}

void TamperingSource::Answer(Waiting* w) {
  auto node = waiting_.extract(w->inner->name());
  w->inner->RemoveListener(w);
  moqt::TrackResolution r;
  if (auto f = w->inner->failure()) {
    r.error = moqt::RequestErrorCode::kInternalError;
    r.reason = "upstream failed: " + f->second;
  } else {
    r.track = CopyOf(w->inner);
  }
  for (auto& d : w->done) d(r);
}

}  // namespace kvcs::relay::test
