// The send-order scheme of a session's streams (transport::Stream::SetSendOrder, lower first):
// control streams, then request streams, then data streams ordered by (subscriber priority,
// publisher priority, group order, fill-before-live within a group).
#ifndef KVCS_MOQT_SESSION_MOQT_SEND_ORDER_H_
#define KVCS_MOQT_SESSION_MOQT_SEND_ORDER_H_

#include <algorithm>
#include <cstdint>

#include "moqt/moqt_messages.h"

namespace kvcs::moqt {

inline constexpr uint64_t kControlSendOrder = 0;
inline constexpr uint64_t kRequestSendOrder = 1;

// The send order of a data stream carrying `group`: 2 + (8 bits subscriber priority, 8 bits
// publisher priority, 45 bits of group in `order` (larger IDs share the last key), 1 bit: fill
// before live).
inline uint64_t DataSendOrder(uint8_t subscriber_priority, uint8_t publisher_priority,
                              GroupOrder order, uint64_t group, bool fill) {
  constexpr uint64_t kGroupKeyMask = (uint64_t{1} << 45) - 1;
  uint64_t g = std::min(group, kGroupKeyMask);
  if (order == GroupOrder::kDescending) g = kGroupKeyMask - g;
  return 2 + ((uint64_t{subscriber_priority} << 55) | (uint64_t{publisher_priority} << 47) |
              (g << 1) | (fill ? 0 : 1));
}

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_SEND_ORDER_H_
