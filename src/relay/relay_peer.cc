// RelayPeer: token check at setup, grant check per request, announcements (relay_peer.h).
#include "relay/relay_peer.h"

#include "common/hex.h"
#include "relay/relay.h"

namespace kvcs::relay {

auth::Namespace GrantNamespace(const moqt::TrackNamespace& ns) {
  auth::Namespace out;
  const bool kvcs = !ns.empty() && ns[0] == "kvcs-1";
  for (size_t i = 0; i < ns.size(); ++i) {
    if (i > 0 && kvcs) {
      out.push_back(ToHex(ByteSpan(reinterpret_cast<const uint8_t*>(ns[i].data()), ns[i].size())));
    } else {
      out.push_back(ns[i]);
    }
  }
  return out;
}

RelayPeer::RelayPeer(Relay* relay, moqt::MoqtSession* session) : relay_(relay), session_(session) {
  relay_->peers_.insert(this);
  relay_->metrics_.sessions_accepted.fetch_add(1, std::memory_order_relaxed);
  relay_->metrics_.sessions_open.fetch_add(1, std::memory_order_relaxed);
}

RelayPeer::~RelayPeer() {
  if (!gone_) {
    gone_ = true;
    relay_->PeerGone(this);
  }
  relay_->metrics_.sessions_open.fetch_sub(1, std::memory_order_relaxed);
}

std::optional<moqt::SessionError> RelayPeer::OnPeerSetup(const moqt::SetupOptions& peer) {
  const auth::Verifier* v = relay_->options_.verifier.get();
  if (!v) return std::nullopt;  // open access
  std::optional<moqt::SessionError> worst = moqt::SessionError::kUnauthorized;
  for (const moqt::AuthToken& t : peer.authorization_tokens) {
    if (t.token_type == kRelayPathTokenType) continue;
    auto claims = v->Verify(t.value, relay_->NowS());
    if (claims.ok()) {
      claims_ = std::move(*claims);
      return std::nullopt;
    }
    if (claims.status().Is(auth::TokenError::kExpired)) {
      worst = moqt::SessionError::kExpiredAuthToken;
    } else if (claims.status().Is(auth::TokenError::kMalformed) ||
               claims.status().Is(auth::TokenError::kTooLarge)) {
      if (worst == moqt::SessionError::kUnauthorized)
        worst = moqt::SessionError::kMalformedAuthToken;
    }
  }
  relay_->metrics_.Refuse(Refusal::kBadToken);
  return worst;
}

std::optional<moqt::RequestErrorCode> RelayPeer::AuthorizeRequest(
    moqt::MessageType type, const moqt::FullTrackName& track,
    const std::vector<moqt::AuthToken>& tokens) {
  if (relay_->OnPath(tokens)) {
    relay_->metrics_.Refuse(Refusal::kLoop);
    return moqt::RequestErrorCode::kNotSupported;
  }
  if (type == moqt::MessageType::kPublishNamespace) announce_tokens_ = tokens;
  if (!relay_->options_.verifier) return std::nullopt;
  if (!claims_) {
    relay_->metrics_.Refuse(Refusal::kUnauthorized);
    return moqt::RequestErrorCode::kUnauthorized;
  }
  if (relay_->NowS() >= claims_->exp) {
    relay_->metrics_.Refuse(Refusal::kBadToken);
    return moqt::RequestErrorCode::kExpiredAuthToken;
  }
  const auth::Action action =
      type == moqt::MessageType::kPublishNamespace || type == moqt::MessageType::kPublish
          ? auth::Action::kPublish
          : auth::Action::kSubscribe;
  if (!claims_->Allows(action, GrantNamespace(track.track_namespace))) {
    relay_->metrics_.Refuse(Refusal::kUnauthorized);
    return moqt::RequestErrorCode::kUnauthorized;
  }
  return std::nullopt;
}

std::optional<moqt::RequestErrorCode> RelayPeer::OnPublishNamespace(
    const moqt::TrackNamespace& ns) {
  std::vector<moqt::AuthToken> tokens = std::move(announce_tokens_);
  announce_tokens_.clear();
  if (announced_.count(ns)) return moqt::RequestErrorCode::kPrefixOverlap;
  auto err = relay_->Announce(this, ns, tokens);
  if (!err) announced_.insert(ns);
  return err;
}

moqt::PublishAnswer RelayPeer::OnPublish(const moqt::IncomingPublish& publish) {
  return relay_->AcceptPublish(this, publish);
}

void RelayPeer::OnPublishNamespaceDone(const moqt::TrackNamespace& ns) {
  if (announced_.erase(ns)) relay_->Withdraw(this, ns);
}

void RelayPeer::OnSubscriberCutOff(moqt::MessageType type, const moqt::FullTrackName& track,
                                   uint64_t request_id, uint64_t stalled_ms) {
  relay_->metrics_.Refuse(Refusal::kSlowSubscriber);
  relay_->Log(std::string(type == moqt::MessageType::kFetch ? "fetch " : "subscription ") +
              std::to_string(request_id) + " of " + TrackLabel(track) +
              " cut off (TOO_FAR_BEHIND): its subscriber took nothing for " +
              std::to_string(stalled_ms) + " ms");
}

void RelayPeer::OnSessionClosed(uint64_t, const std::string&, bool) {
  if (gone_) return;
  gone_ = true;
  relay_->PeerGone(this);
}

}  // namespace kvcs::relay
