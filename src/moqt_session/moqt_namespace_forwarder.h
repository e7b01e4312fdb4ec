// NamespaceForwarder: the publisher side of one SUBSCRIBE_NAMESPACE a peer sent us. It listens to
// the TrackSource's namespace changes and turns those under the subscribed prefix into NAMESPACE
// / NAMESPACE_DONE messages (suffixes relative to the prefix; each namespace announced once while
// active, at most kMaxNamespacesPerSession), which it hands to its Sink — the session, which
// writes them on the request's stream. Owned by the request's IncomingRequest; the session
// registers it with the TrackSource and removes it before it dies.
// THREADING: single-threaded (the session's executor). Internal to moqt_session.
#ifndef KVCS_MOQT_SESSION_MOQT_NAMESPACE_FORWARDER_H_
#define KVCS_MOQT_SESSION_MOQT_NAMESPACE_FORWARDER_H_

#include <cstdint>
#include <set>
#include <utility>

#include "moqt/moqt_messages.h"
#include "moqt_session/moqt_track_source.h"

namespace kvcs::moqt {

class NamespaceForwarder : public NamespaceListener {
 public:
  // Where the forwarded messages go.
  class Sink {
   public:
    // Sends `message` on the stream of request `request_id`. May end that request (and so
    // destroy the forwarder that calls it).
    virtual void SendNamespaceMessage(uint64_t request_id, const ControlMessage& message) = 0;

   protected:
    ~Sink() = default;
  };

  NamespaceForwarder(Sink* sink, uint64_t request_id, TrackNamespace prefix)
      : sink_(sink), request_id_(request_id), prefix_(std::move(prefix)) {}
  NamespaceForwarder(const NamespaceForwarder&) = delete;
  NamespaceForwarder& operator=(const NamespaceForwarder&) = delete;

  void OnNamespaceAdded(const TrackNamespace& ns) override;
  void OnNamespaceRemoved(const TrackNamespace& ns) override;

 private:
  Sink* sink_;
  uint64_t request_id_;
  TrackNamespace prefix_;
  std::set<TrackNamespace> sent_;  // announced with NAMESPACE and not withdrawn since
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_NAMESPACE_FORWARDER_H_
