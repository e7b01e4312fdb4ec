#include "moqt/moqt_messages.h"

namespace kvcs::moqt {

bool IsKnownMessageType(uint64_t type) {
  switch (type) {
    case 0x02:
    case 0x03:
    case 0x04:
    case 0x05:
    case 0x06:
    case 0x07:
    case 0x08:
    case 0x0B:
    case 0x0D:
    case 0x0E:
    case 0x0F:
    case 0x10:
    case 0x16:
    case 0x18:
    case 0x1D:
    case 0x22:
    case 0x50:
    case 0x51:
    case 0x2F00:
      return true;
    default:
      return false;
  }
}

std::string_view MessageTypeName(MessageType t) {
  switch (t) {
    case MessageType::kRequestUpdate:
      return "REQUEST_UPDATE";
    case MessageType::kSubscribe:
      return "SUBSCRIBE";
    case MessageType::kSubscribeOk:
      return "SUBSCRIBE_OK";
    case MessageType::kRequestError:
      return "REQUEST_ERROR";
    case MessageType::kPublishNamespace:
      return "PUBLISH_NAMESPACE";
    case MessageType::kRequestOk:
      return "REQUEST_OK";
    case MessageType::kNamespace:
      return "NAMESPACE";
    case MessageType::kPublishDone:
      return "PUBLISH_DONE";
    case MessageType::kTrackStatus:
      return "TRACK_STATUS";
    case MessageType::kNamespaceDone:
      return "NAMESPACE_DONE";
    case MessageType::kPublishSkipped:
      return "PUBLISH_SKIPPED";
    case MessageType::kGoAway:
      return "GOAWAY";
    case MessageType::kFetch:
      return "FETCH";
    case MessageType::kFetchOk:
      return "FETCH_OK";
    case MessageType::kPublish:
      return "PUBLISH";
    case MessageType::kPublishStateNotify:
      return "PUBLISH_STATE_NOTIFY";
    case MessageType::kSubscribeNamespace:
      return "SUBSCRIBE_NAMESPACE";
    case MessageType::kSubscribeTracks:
      return "SUBSCRIBE_TRACKS";
    case MessageType::kSetup:
      return "SETUP";
  }
  return "UNKNOWN";
}

MessageType MessageTypeOf(const ControlMessage& m) {
  struct V {
    MessageType operator()(const Setup&) { return MessageType::kSetup; }
    MessageType operator()(const GoAway&) { return MessageType::kGoAway; }
    MessageType operator()(const RequestOk&) { return MessageType::kRequestOk; }
    MessageType operator()(const RequestError&) { return MessageType::kRequestError; }
    MessageType operator()(const Subscribe&) { return MessageType::kSubscribe; }
    MessageType operator()(const SubscribeOk&) { return MessageType::kSubscribeOk; }
    MessageType operator()(const RequestUpdate&) { return MessageType::kRequestUpdate; }
    MessageType operator()(const PublishStateNotify&) { return MessageType::kPublishStateNotify; }
    MessageType operator()(const Publish&) { return MessageType::kPublish; }
    MessageType operator()(const PublishDone&) { return MessageType::kPublishDone; }
    MessageType operator()(const Fetch&) { return MessageType::kFetch; }
    MessageType operator()(const FetchOk&) { return MessageType::kFetchOk; }
    MessageType operator()(const TrackStatus&) { return MessageType::kTrackStatus; }
    MessageType operator()(const PublishNamespace&) { return MessageType::kPublishNamespace; }
    MessageType operator()(const Namespace&) { return MessageType::kNamespace; }
    MessageType operator()(const NamespaceDone&) { return MessageType::kNamespaceDone; }
    MessageType operator()(const SubscribeNamespace&) { return MessageType::kSubscribeNamespace; }
    MessageType operator()(const SubscribeTracks&) { return MessageType::kSubscribeTracks; }
    MessageType operator()(const PublishSkipped&) { return MessageType::kPublishSkipped; }
  };
  return std::visit(V{}, m);
}

bool IsValidObjectStatus(uint64_t v) { return v == 0x0 || v == 0x3 || v == 0x4; }

bool IsValidSubgroupType(uint64_t type) {
  if (type >= 0x80) return false;
  if ((type & kSubgroupFlagBase) == 0) return false;
  return ((type & kSubgroupFlagIdModeMask) >> 1) != 3;
}

uint8_t SubgroupTypeOf(const SubgroupHeader& h) {
  uint8_t t = kSubgroupFlagBase;
  if (h.has_properties) t |= kSubgroupFlagProperties;
  t |= static_cast<uint8_t>(static_cast<uint8_t>(h.id_mode) << 1);
  if (h.end_of_group) t |= kSubgroupFlagEndOfGroup;
  if (!h.publisher_priority) t |= kSubgroupFlagDefaultPriority;
  if (h.first_object) t |= kSubgroupFlagFirstObject;
  return t;
}

SubgroupHeader SubgroupHeaderFromType(uint8_t type) {
  SubgroupHeader h;
  h.has_properties = type & kSubgroupFlagProperties;
  h.id_mode = static_cast<SubgroupIdMode>((type & kSubgroupFlagIdModeMask) >> 1);
  h.end_of_group = type & kSubgroupFlagEndOfGroup;
  h.first_object = type & kSubgroupFlagFirstObject;
  return h;
}

bool IsValidDatagramType(uint64_t type) {
  // Bits 0-3 and 5 are defined; bit 4 must be 0; STATUS together with END_OF_GROUP is invalid.
  if (type & ~uint64_t{0x2F}) return false;
  if ((type & kDatagramFlagStatus) && (type & kDatagramFlagEndOfGroup)) return false;
  return true;
}

}  // namespace kvcs::moqt
