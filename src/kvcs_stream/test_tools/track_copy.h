// A relay's copy of a publication for the kvcs_stream tests: copies tracks of one namespace from
// one TrackStore into another, object by object (status objects too), optionally replacing the
// payload of one object (a corrupting relay) or leaving it out (a lossy one), or only a range of
// the objects (a relay that holds a prefix of a track yet).
#ifndef KVCS_KVCS_STREAM_TEST_TOOLS_TRACK_COPY_H_
#define KVCS_KVCS_STREAM_TEST_TOOLS_TRACK_COPY_H_

#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt_session/moqt_track_store.h"

namespace kvcs::stream::test {

struct Tamper {
  std::string track;  // "" : none
  moqt::Location location;
  std::optional<Bytes> payload;  // nullopt: drop the object
};

// Which objects to copy: [from, before). A relay still filling holds a prefix of a track; the
// rest is copied later into the same tracks (one that exists in `to` is appended to).
struct CopyRange {
  moqt::Location from{0, 0};
  std::optional<moqt::Location> before;  // nullopt: to the end
};

// Copies `names` (tracks of `ns` that exist in `from`; missing ones are skipped) into `to`.
Status CopyTracks(moqt::TrackStore& from, const moqt::TrackNamespace& ns,
                  const std::vector<std::string>& names, moqt::TrackStore& to,
                  const Tamper& tamper = {}, const CopyRange& range = {});

}  // namespace kvcs::stream::test

#endif  // KVCS_KVCS_STREAM_TEST_TOOLS_TRACK_COPY_H_
