// TamperingSource: a test double of a relay that alters what it serves. It wraps a TrackSource
// (a Relay: its cache and upstream feeds are real) and answers every SUBSCRIBE / FETCH /
// TRACK_STATUS with a copy of the inner source's track, made once that track is known complete
// through its Largest Object and then kept up to date with what the inner track gets later (new
// objects, End of Group, End of Track: a live subscription to the copy ends when the inner track
// does), every Normal object passed through `tamper` first (flip a bit, take another group's or
// another track's payload and properties), or left out when `drop` says so (a lossy relay: the
// copy is complete, so the gap reads "does not exist" on a FETCH or a subscription's fill).
// Status objects are copied as they are. Copies are made once per track and reused, so every
// requester sees the same alteration. Production code has no such hook: the relay never changes
// an object.
// THREADING: single-threaded (the sessions' executor). The inner source outlives this one.
#ifndef KVCS_RELAY_TEST_TOOLS_TAMPERING_SOURCE_H_
#define KVCS_RELAY_TEST_TOOLS_TAMPERING_SOURCE_H_

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "moqt_session/moqt_track.h"
#include "moqt_session/moqt_track_source.h"
#include "relay/relay.h"

namespace kvcs::relay::test {

class TamperingSource : public moqt::TrackSource {
 public:
  // Alters `object` (a copy) of `track`, or leaves it. Either may be empty.
  using Tamper = std::function<void(const moqt::Track& track, moqt::PublishedObject& object)>;
  // Whether to leave `object` of `track` out of the copy.
  using Drop = std::function<bool(const moqt::Track& track, const moqt::PublishedObject& object)>;
  TamperingSource(moqt::TrackSource* inner, Tamper tamper, Drop drop = {});
  ~TamperingSource() override;

  std::shared_ptr<moqt::Track> FindTrack(const moqt::FullTrackName& name) override;
  void ResolveTrack(const moqt::TrackQuery& query, moqt::TrackResolved done) override;
  std::vector<moqt::TrackNamespace> ListNamespaces() override { return inner_->ListNamespaces(); }
  void AddNamespaceListener(moqt::NamespaceListener* l) override {
    inner_->AddNamespaceListener(l);
  }
  void RemoveNamespaceListener(moqt::NamespaceListener* l) override {
    inner_->RemoveNamespaceListener(l);
  }
  // Objects `tamper` changed (payload or properties), over every copy made.
  size_t altered() const { return altered_; }
  // Objects `drop` left out, over every copy made.
  size_t dropped() const { return dropped_; }

 private:
  // Requests waiting for one inner track to be known complete.
  struct Waiting : moqt::TrackListener {
    TamperingSource* owner = nullptr;
    std::shared_ptr<moqt::Track> inner;
    std::vector<moqt::TrackResolved> done;
    void OnObjectAdded(moqt::Track&, const moqt::PublishedObject&) override { Check(); }
    void OnTrackProgress(moqt::Track&) override { Check(); }
    void Check();
  };
  // One inner track's copy, following the inner track.
  struct Copy : moqt::TrackListener {
    TamperingSource* owner = nullptr;
    std::shared_ptr<moqt::Track> inner, copy;
    void OnObjectAdded(moqt::Track&, const moqt::PublishedObject& o) override {
      owner->Add(*inner, o, *copy);
    }
  };
  // Whether `t` holds everything up to its Largest Object (or failed).
  static bool Settled(const moqt::Track& t);
  std::shared_ptr<moqt::Track> CopyOf(const std::shared_ptr<moqt::Track>& inner);
  // `object` of `inner` into `copy`: dropped, tampered with, or as it is.
  void Add(const moqt::Track& inner, const moqt::PublishedObject& object, moqt::Track& copy);
  void Answer(Waiting* w);

  moqt::TrackSource* inner_;
  Tamper tamper_;
  Drop drop_;
  std::map<moqt::FullTrackName, std::unique_ptr<Copy>, FullTrackNameLess> copies_;
  std::map<moqt::FullTrackName, std::unique_ptr<Waiting>, FullTrackNameLess> waiting_;
  size_t altered_ = 0;
  size_t dropped_ = 0;
};

}  // namespace kvcs::relay::test

#endif  // KVCS_RELAY_TEST_TOOLS_TAMPERING_SOURCE_H_
