// HolderSource: what a Recovery (recovery.h) asks of a KVSP HTTP holder (kvsp.md §8): the raw
// containers of some blocks of the caller's prompt, each for a layer range. The interface keeps
// this folder free of sockets; kvsp_http/http_holder_source.h implements it over the §8 client.
// A test may implement it in memory. The Recovery verifies every container itself.
#ifndef KVCS_KVCS_STREAM_HOLDER_SOURCE_H_
#define KVCS_KVCS_STREAM_HOLDER_SOURCE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "kvcs_stream/cache_identity.h"

namespace kvcs::stream {

// One block (0-based index into the caller's prompt; its Block Key is identity.block_keys[block])
// and the inclusive layer range wanted, in the raw codec.
struct HolderFetch {
  uint64_t block = 0;
  uint32_t first_layer = 0;
  uint32_t last_layer = 0;
};

// The answer for one HolderFetch: the container bytes, or why there are none.
struct HolderBlock {
  uint64_t block = 0;
  Status status;
  Bytes container;
};

class HolderSource {
 public:
  using Done = std::function<void(std::vector<HolderBlock>)>;
  virtual ~HolderSource() = default;
  // For the report, e.g. "http http://127.0.0.1:9000/_kvsp".
  virtual std::string name() const = 0;
  // Starts fetching `blocks` of the cache `identity` names, giving up after `timeout_ms`. Calls
  // `done` once with one HolderBlock per fetch, on the caller's (session) thread and never from
  // inside Fetch. One Fetch at a time.
  virtual void Fetch(const CacheIdentity& identity, std::vector<HolderFetch> blocks,
                     uint64_t timeout_ms, Done done) = 0;
  // Abandons the Fetch in progress: its `done` is not called.
  virtual void Cancel() = 0;
};

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_HOLDER_SOURCE_H_
