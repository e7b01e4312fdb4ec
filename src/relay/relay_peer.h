// RelayPeer: the relay's side of one accepted session (a publisher, a subscriber, a downstream
// relay): its MoqtSessionCallbacks. It checks the setup's token, holds the grant it carries,
// checks every request against it, and tells the Relay about the namespaces the peer announces.
// THREADING: single-threaded (the relay's executor). Destroyed with its session.
#ifndef KVCS_RELAY_RELAY_PEER_H_
#define KVCS_RELAY_RELAY_PEER_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "auth/token.h"
#include "moqt_session/moqt_session.h"

namespace kvcs::relay {

class Relay;

// A MOQT namespace as the token's grants name it (auth::Namespace): the first field as text,
// every later field as lowercase hex when the first is "kvcs-1" (KVCS ids are binary), as text
// otherwise.
auth::Namespace GrantNamespace(const moqt::TrackNamespace& ns);

class RelayPeer : public moqt::MoqtSessionCallbacks {
 public:
  RelayPeer(Relay* relay, moqt::MoqtSession* session);
  ~RelayPeer() override;

  moqt::MoqtSession* session() const { return session_; }
  const std::set<moqt::TrackNamespace>& announced() const { return announced_; }

  // moqt::MoqtSessionCallbacks
  std::optional<moqt::SessionError> OnPeerSetup(const moqt::SetupOptions& peer) override;
  std::optional<moqt::RequestErrorCode> AuthorizeRequest(
      moqt::MessageType type, const moqt::FullTrackName& track,
      const std::vector<moqt::AuthToken>& tokens) override;
  std::optional<moqt::RequestErrorCode> OnPublishNamespace(const moqt::TrackNamespace& ns) override;
  void OnPublishNamespaceDone(const moqt::TrackNamespace& ns) override;
  // PUBLISH (draft-22): the track goes into the cache (Relay::AcceptPublish).
  moqt::PublishAnswer OnPublish(const moqt::IncomingPublish& publish) override;
  void OnSessionClosed(uint64_t code, const std::string& reason, bool by_peer) override;
  // Counted (refusals_total{cause="slow_subscriber"}) and logged.
  void OnSubscriberCutOff(moqt::MessageType type, const moqt::FullTrackName& track,
                          uint64_t request_id, uint64_t stalled_ms) override;

 private:
  Relay* relay_;
  moqt::MoqtSession* session_;
  std::optional<auth::Claims> claims_;  // set when the relay checks tokens and SETUP had one
  std::set<moqt::TrackNamespace> announced_;
  // The tokens of the PUBLISH_NAMESPACE being handled (AuthorizeRequest comes just before
  // OnPublishNamespace), so its relay path goes along when forwarded upstream.
  std::vector<moqt::AuthToken> announce_tokens_;
  bool gone_ = false;
};

}  // namespace kvcs::relay

#endif  // KVCS_RELAY_RELAY_PEER_H_
