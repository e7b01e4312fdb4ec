// PublishSet: PUBLISHes (draft-22 §10) a set of tracks of a session's TrackSource and follows
// them until each is done, for publishers that push their tracks to a relay rather than wait
// for it to subscribe (a relay keeps a PUBLISHed publication after the publisher leaves). A
// publisher calls Publish() with its tracks once its PUBLISH_NAMESPACE is accepted (and again
// with new tracks), ends its tracks, and closes its session from WhenDone().
//
// A PUBLISH is done when the subscriber received all of it (PublishVisitor::OnPublishDone
// delivered), refused it, or the session ended. UNINTERESTED counts as held: the subscriber says
// it has the track already (a relay that cached it whole).
// THREADING: single-threaded, on the session's executor. The PublishSet may be destroyed before
// the session: its PUBLISHes then go on without it.
#ifndef KVCS_MOQT_SESSION_MOQT_PUBLISH_SET_H_
#define KVCS_MOQT_SESSION_MOQT_PUBLISH_SET_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "common/status.h"
#include "moqt/moqt_messages.h"
#include "moqt_session/moqt_session.h"

namespace kvcs::moqt {

class PublishSet {
 public:
  explicit PublishSet(MoqtSession* session, std::vector<AuthToken> auth_tokens = {});
  PublishSet(const PublishSet&) = delete;
  PublishSet& operator=(const PublishSet&) = delete;

  // PUBLISHes every track of `names` not PUBLISHed by this set yet. Stops at the first
  // PublishTrack error and returns it (the tracks before it are PUBLISHed).
  Status Publish(const std::vector<FullTrackName>& names);
  // PUBLISHes not done yet.
  size_t pending() const;
  // Done: received whole (or held already, UNINTERESTED).
  size_t delivered() const;
  // Done without delivery: refused (other codes), cancelled, or the session ended; with the
  // error when the subscriber sent one.
  const std::vector<std::pair<FullTrackName, std::optional<RequestError>>>& failed() const;
  // Runs `done` once nothing is pending (at once when nothing is). One callback at a time.
  void WhenDone(std::function<void()> done);

 private:
  struct State;
  MoqtSession* session_;
  std::vector<AuthToken> tokens_;
  std::set<std::pair<TrackNamespace, std::string>> published_;
  std::shared_ptr<State> state_;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_PUBLISH_SET_H_
