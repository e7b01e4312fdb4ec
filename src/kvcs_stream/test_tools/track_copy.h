// A relay's copy of a publication for the kvcs_stream tests: copies tracks of one namespace from
// one TrackStore into another, object by object (status objects too), optionally replacing the
// payload of one object (a corrupting relay) or leaving it out (a lossy one).
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

// Copies `names` (tracks of `ns` that exist in `from`; missing ones are skipped) into `to`.
Status CopyTracks(moqt::TrackStore& from, const moqt::TrackNamespace& ns,
                  const std::vector<std::string>& names, moqt::TrackStore& to,
                  const Tamper& tamper = {});

}  // namespace kvcs::stream::test

#endif  // KVCS_KVCS_STREAM_TEST_TOOLS_TRACK_COPY_H_
