#include "moqt_session/moqt_filters.h"

#include <map>

namespace kvcs::moqt {

Location FilterStart(const LocationFilter& f, std::optional<Location> largest) {
  switch (f.type) {
    case LocationFilterType::kNone:
      return {0, 0};
    case LocationFilterType::kRelativeStart: {
      // {Largest.Group + 1 - StartGroup, 0}, clamped to [0, 2^64-1]; nothing yet = group 0.
      if (!largest) return {0, 0};
      uint64_t next = largest->group == UINT64_MAX ? UINT64_MAX : largest->group + 1;
      return {f.start_group >= next ? 0 : next - f.start_group, 0};
    }
    case LocationFilterType::kAbsoluteStart:
    case LocationFilterType::kAbsoluteStartGroupEnd:
    case LocationFilterType::kAbsoluteRange:
      return {f.start_group, f.start_object};
    case LocationFilterType::kNextObject:
      if (!largest) return {0, 0};
      if (largest->object == UINT64_MAX) return {largest->group + 1, 0};
      return {largest->group, largest->object + 1};
  }
  return {0, 0};
}

std::optional<Location> FilterEnd(const LocationFilter& f) {
  // The codec rejected StartGroup + EndGroupDelta overflow already; saturate defensively.
  uint64_t end_group = f.end_group_delta > UINT64_MAX - f.start_group
                           ? UINT64_MAX
                           : f.start_group + f.end_group_delta;
  switch (f.type) {
    case LocationFilterType::kAbsoluteStartGroupEnd:
      return Location{end_group, UINT64_MAX};
    case LocationFilterType::kAbsoluteRange:
      return Location{end_group, f.end_object};
    default:
      return std::nullopt;
  }
}

LocationRange SubscriptionRange(const LocationFilter& f, std::optional<Location> largest) {
  return {FilterStart(f, largest), FilterEnd(f)};
}

LocationRange FetchRange(const LocationFilter& f, std::optional<Location> largest) {
  LocationRange r{FilterStart(f, largest), FilterEnd(f)};
  if (!largest) {
    r.start = {0, 1};
    r.end = Location{0, 0};  // empty
    return r;
  }
  if (!r.end || *r.end > *largest) r.end = *largest;
  return r;
}

uint64_t CountRanges(const RangeFilters& f) {
  uint64_t n = 0;
  for (const auto* v :
       {&f.subgroup, &f.object_id, &f.priority, &f.object_property, &f.track_property}) {
    for (const RangeFilter& r : *v) n += r.ranges.size();
  }
  return n;
}

bool InRanges(const std::vector<FilterRange>& ranges, uint64_t v) {
  for (const FilterRange& r : ranges) {
    if (v >= r.start && (!r.end || v <= *r.end)) return true;
  }
  return false;
}

bool PassesRangeFilters(const RangeFilters& f, uint64_t subgroup_id, uint64_t object_id,
                        uint8_t publisher_priority, const Properties& properties) {
  // SetID -> all filters of the set passed so far.
  std::map<uint8_t, bool> sets;
  auto apply = [&sets](const RangeFilter& r, std::optional<uint64_t> value) {
    if (r.remove) return;
    auto [it, inserted] = sets.emplace(r.set_id, true);
    if (!value || !InRanges(r.ranges, *value)) it->second = false;
  };
  for (const RangeFilter& r : f.subgroup) apply(r, subgroup_id);
  for (const RangeFilter& r : f.object_id) apply(r, object_id);
  for (const RangeFilter& r : f.priority) apply(r, publisher_priority);
  for (const RangeFilter& r : f.object_property) {
    std::optional<uint64_t> v;
    for (const KeyValuePair& p : properties) {
      if (p.type == r.property_type && p.type % 2 == 0) {
        v = p.value;
        break;
      }
    }
    apply(r, v);
  }
  if (sets.empty()) return true;
  for (const auto& [id, pass] : sets) {
    if (pass) return true;
  }
  return false;
}

RangeFilter ObjectIdFilter(const std::vector<FilterRange>& ranges) {
  RangeFilter r;
  r.set_id = 0;
  r.ranges = ranges;
  return r;
}

}  // namespace kvcs::moqt
