// Track copies for the tests. See track_copy.h.
#include "kvcs_stream/test_tools/track_copy.h"

#include <memory>

namespace kvcs::stream::test {

Status CopyTracks(moqt::TrackStore& from, const moqt::TrackNamespace& ns,
                  const std::vector<std::string>& names, moqt::TrackStore& to, const Tamper& tamper,
                  const CopyRange& range) {
  for (const std::string& name : names) {
    auto src = from.FindTrack({ns, name});
    if (src == nullptr) continue;
    std::shared_ptr<moqt::Track> dst = to.FindTrack({ns, name});
    if (dst == nullptr) {
      KVCS_ASSIGN_OR_RETURN(dst, to.CreateTrack({ns, name}, src->options()));
    }
    for (auto g = src->NextGroup(std::nullopt, moqt::GroupOrder::kAscending); g;
         g = src->NextGroup(*g, moqt::GroupOrder::kAscending)) {
      for (const moqt::PublishedObject* o = src->NextInGroup(*g, 0); o != nullptr;
           o = src->NextInGroup(*g, o->location.object + 1)) {
        if (o->location < range.from || (range.before && o->location >= *range.before)) continue;
        moqt::PublishedObject c = *o;
        if (name == tamper.track && o->location == tamper.location) {
          if (!tamper.payload) continue;
          c.payload = std::make_shared<const Bytes>(*tamper.payload);
        }
        KVCS_RETURN_IF_ERROR(dst->AddObject(std::move(c)));
      }
    }
  }
  return Status::Ok();
}

}  // namespace kvcs::stream::test
