// OutgoingRequest's bookkeeping helpers (moqt_request_state.h).
#include "moqt_session/moqt_request_state.h"

#include "moqt/moqt_limits.h"

namespace kvcs::moqt {

bool OutgoingRequest::CountDataStream() {
  streams_seen++;
  streams_open++;
  return !(done && done->stream_count != kStreamCountUnknown && streams_seen > done->stream_count);
}

void OutgoingRequest::AssumePublishDone(std::string reason, uint64_t now_ms) {
  if (done) return;
  PublishDone d;
  d.status_code = static_cast<uint64_t>(PublishDoneCode::kInternalError);
  d.stream_count = kStreamCountUnknown;
  d.reason = std::move(reason);
  done = d;
  done_at_ms = now_ms;
}

SubscriptionDone OutgoingRequest::Completion(bool all_streams_received) const {
  SubscriptionDone d;
  d.status = done->status_code;
  d.reason = done->reason;
  d.track_ended =
      eot_seen || done->status_code == static_cast<uint64_t>(PublishDoneCode::kTrackEnded);
  d.all_streams_received = all_streams_received;
  return d;
}

void OutgoingRequest::FillAnswered(uint64_t fill_id, const LocationFilter& f,
                                   std::optional<Location> largest) {
  // The publisher's rule (MoqtSessionImpl::StartFill): no stream for an empty range, nor while
  // not forwarding.
  if (!sub_options.forward || FetchRange(f, largest).empty()) return;
  if (!fills_arrived.count(fill_id)) fills_owed.insert(fill_id);
}

bool OutgoingRequest::InLocalObjectRanges(uint64_t object_id) const {
  return local_object_ranges.empty() || InRanges(local_object_ranges, object_id);
}

}  // namespace kvcs::moqt
