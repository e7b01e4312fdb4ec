// IncomingDataStream: parsing and reassembly of one peer data stream
// (moqt_incoming_data_stream.h).
#include "moqt_session/moqt_incoming_data_stream.h"

#include <algorithm>
#include <utility>

#include "moqt/moqt_error.h"
#include "moqt/moqt_limits.h"
#include "moqt_session/moqt_session_limits.h"

namespace kvcs::moqt {

IncomingDataStream::HeaderPeek IncomingDataStream::PeekSubgroupHeader(ByteSpan data,
                                                                      const WireOptions& wire) {
  struct HeaderProbe : DataStreamVisitor {
    std::optional<SubgroupHeader> h;
    void OnSubgroupHeader(const SubgroupHeader& header) override { h = header; }
    void OnObjectHeader(const ObjectHeader&) override {}
    void OnObjectPayload(ByteSpan, bool) override {}
    void OnStreamEnd() override {}
    void OnError(const Status&) override {}
  } probe;
  DataStreamParser pp(&probe, wire);
  pp.OnData(data.subspan(0, std::min<size_t>(data.size(), kMaxDataUnitBytes)), false);
  return {probe.h, pp.failed()};
}

ReceivedObject IncomingDataStream::CurrentObject(ByteSpan payload) const {
  ReceivedObject o;
  o.location = current_.location;
  o.subgroup_id = current_.subgroup_id.value_or(0);
  o.status = current_.status;
  o.properties = &current_.properties;
  o.payload = payload;
  if (is_fetch_) {  // fetch and fill objects carry their own priority
    o.publisher_priority = current_.publisher_priority.value_or(128);
    o.via = fill_ ? DeliveryKind::kFill : DeliveryKind::kFetch;
  } else {
    o.publisher_priority = header_.publisher_priority.value_or(128);
    o.via = DeliveryKind::kSubscription;
  }
  return o;
}

void IncomingDataStream::ReleasePayload() {
  session_->ReleaseReassemblyBytes(held_);
  held_ = 0;
  payload_.reset();
}

void IncomingDataStream::OnSubgroupHeader(const SubgroupHeader& h) {
  header_ = h;
  if (!session_->AttributeSubgroup(*this, h)) refused_ = true;
}

GroupOrder IncomingDataStream::OnFetchHeader(const FetchHeader& h) {
  is_fetch_ = true;
  std::optional<GroupOrder> o = session_->AttributeFetch(*this, h.request_id);
  if (!o) {
    refused_ = true;
    return GroupOrder::kAscending;
  }
  return *o;
}

void IncomingDataStream::OnObjectHeader(const ObjectHeader& o) {
  if (refused_) return;
  ReleasePayload();
  current_ = o;
  if (o.payload_length > kMaxObjectPayloadBytes ||
      !session_->ReserveReassemblyBytes(o.payload_length)) {
    session_->RefuseDataStream(*this, StreamResetCode::kExcessiveLoad);
    return;
  }
  held_ = o.payload_length;
  if (o.payload_length == 0) {
    ReleasePayload();
    session_->DeliverObject(*this, {}, nullptr);
  }
}

void IncomingDataStream::OnObjectPayload(ByteSpan chunk, bool end_of_object) {
  if (refused_) return;
  if (end_of_object && !payload_) {
    // The whole payload in one chunk (the common case for objects that fit a transport chunk):
    // delivered from the stream's bytes, no copy.
    ReleasePayload();
    session_->DeliverObject(*this, chunk, nullptr);
    return;
  }
  if (!payload_) {
    payload_ = std::make_shared<Bytes>();
    payload_->reserve(held_);  // one allocation per object, bounded by held_
  }
  payload_->insert(payload_->end(), chunk.begin(), chunk.end());
  if (end_of_object) {
    std::shared_ptr<Bytes> p = std::move(payload_);
    ReleasePayload();
    const ByteSpan view(*p);
    session_->DeliverObject(*this, view, std::move(p));
  }
}

void IncomingDataStream::OnEndOfRange(const EndOfRange& m) {
  if (!refused_) session_->DeliverEndOfRange(*this, m);
}

void IncomingDataStream::OnStreamEnd() { session_->DataStreamEnded(*this, true); }

void IncomingDataStream::OnError(const Status& error) { session_->DataStreamMalformed(error); }

}  // namespace kvcs::moqt
