// Location and range filters evaluated (draft-22 §3.3): pure functions shared by the publisher
// side (which objects a subscription, fill or fetch carries) and the subscriber side (local
// re-application). Thread-safe.
#ifndef KVCS_MOQT_SESSION_MOQT_FILTERS_H_
#define KVCS_MOQT_SESSION_MOQT_FILTERS_H_

#include <cstdint>
#include <optional>

#include "moqt/moqt_messages.h"

namespace kvcs::moqt {

// An inclusive Location range; `end` nullopt = open-ended.
struct LocationRange {
  Location start;
  std::optional<Location> end;
  bool Contains(const Location& l) const { return l >= start && (!end || l <= *end); }
  bool empty() const { return end && *end < start; }
  bool operator==(const LocationRange&) const = default;
};

// The Location a filter starts at, given the Largest Object at processing time (nullopt: nothing
// published yet). kNone starts at {0,0}.
Location FilterStart(const LocationFilter& f, std::optional<Location> largest);
// The filter's own end (nullopt: open). kAbsoluteStartGroupEnd ends at {end group, 2^64-1}.
std::optional<Location> FilterEnd(const LocationFilter& f);

// A subscription's range: start per FilterStart, end per FilterEnd (never clamped).
LocationRange SubscriptionRange(const LocationFilter& f, std::optional<Location> largest);
// A fetch or fill range: as above, but the end is clamped to `largest` (an open end stops at the
// Largest Object at processing time). Empty when nothing was published.
LocationRange FetchRange(const LocationFilter& f, std::optional<Location> largest);

// Total Ranges across every range filter (the quantity MAX_FILTER_RANGES bounds).
uint64_t CountRanges(const RangeFilters& f);

// Range filters of one object (TRACK_PROPERTY_FILTER is not an object filter and is ignored).
// Filters sharing a SetID are ANDed, sets are ORed; no filters = pass.
bool PassesRangeFilters(const RangeFilters& f, uint64_t subgroup_id, uint64_t object_id,
                        uint8_t publisher_priority, const Properties& properties);

// OBJECTID_FILTER set 0 built from application ranges (absolute, inclusive).
RangeFilter ObjectIdFilter(const std::vector<FilterRange>& ranges);
bool InRanges(const std::vector<FilterRange>& ranges, uint64_t v);

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_FILTERS_H_
