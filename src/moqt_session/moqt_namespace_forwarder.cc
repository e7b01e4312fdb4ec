// NamespaceForwarder: TrackSource namespace changes -> NAMESPACE / NAMESPACE_DONE
// (moqt_namespace_forwarder.h).
#include "moqt_session/moqt_namespace_forwarder.h"

#include "moqt_session/moqt_session_limits.h"

namespace kvcs::moqt {
namespace {

// The fields of a namespace beyond a prefix.
TrackNamespace Suffix(const TrackNamespace& ns, const TrackNamespace& prefix) {
  return TrackNamespace(ns.begin() + static_cast<std::ptrdiff_t>(prefix.size()), ns.end());
}

}  // namespace

void NamespaceForwarder::OnNamespaceAdded(const TrackNamespace& ns) {
  if (!NamespaceHasPrefix(ns, prefix_)) return;
  if (sent_.count(ns) || sent_.size() >= kMaxNamespacesPerSession) return;
  sent_.insert(ns);
  sink_->SendNamespaceMessage(request_id_, Namespace{Suffix(ns, prefix_)});  // may destroy us
}

void NamespaceForwarder::OnNamespaceRemoved(const TrackNamespace& ns) {
  if (!NamespaceHasPrefix(ns, prefix_)) return;
  if (!sent_.erase(ns)) return;
  sink_->SendNamespaceMessage(request_id_, NamespaceDone{Suffix(ns, prefix_)});  // may destroy us
}

}  // namespace kvcs::moqt
