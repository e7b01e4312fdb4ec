// The MOQT part of `kvcs demo` (cmd_demo.cc): the synthetic cache published live through a relay.
//
//   kvcs::cli::MoqtDemoOptions o;            // defaults: the first 16 blocks, 20 ms per layer
//   kvcs::Status s = kvcs::cli::RunMoqtDemo(cache, scope_key, o, std::cout);
//
// In-process and on one thread, over real QUIC on 127.0.0.1: a RelayServer (src/relay); a KVCS
// Publisher (kvcs_stream) whose TrackStore is the TrackSource of a client session that announces
// the publication to the relay (PUBLISH_NAMESPACE, as `kvcs publish --relay`), producing one layer
// every `layer_ms` (the modeled compute pace) with a signed manifest.cose version after every
// layer; two consumers through the relay, one joining mid-production (live, §5.2: the manifest
// says the segment is still produced) and one after the end (FETCH, §5.3: complete; kAuto). Both
// verify everything (signature, every object's digest) and compare it bit-exact with the source.
// Then consumer C retrieves the first blocks through a second relay hop serving relay 1's copy with
// one bit flipped in one object (a corrupting relay), with the store (a LocalStore behind the S3
// server's /_kvsp endpoint) as its KVSP §8 holder: the object is refused (Data Digest), and that
// (block, layer) is recovered from the store over HTTP within the bound. Prints the per-layer
// timeline (published, ready at each consumer) and where each of C's blocks came from. Blocking.
#ifndef KVCS_CLI_MOQT_DEMO_H_
#define KVCS_CLI_MOQT_DEMO_H_

#include <cstdint>
#include <ostream>

#include "common/status.h"
#include "kvsp/ids.h"
#include "tensorio/kv_cache.h"

namespace kvcs::cli {

struct MoqtDemoOptions {
  uint64_t blocks = 256;   // the cache's first blocks published (fewer if it has fewer): 4K
  uint64_t layer_ms = 20;  // modeled compute time of one layer: the production pace
  uint64_t timeout_ms = 30000;
  // Consumer C after A and B: through a second relay hop that flips one bit of one object, with
  // the store as a KVSP §8 holder; detected, recovered from the store over HTTP within the bound.
  bool corrupt_leg = true;
  uint64_t recovery_floor_ms = 5000;  // the bound's floor (min_deadline_ms) on a loaded machine
};

Status RunMoqtDemo(const tensorio::KvCacheView& cache, const kvsp::ScopeKey& scope,
                   const MoqtDemoOptions& options, std::ostream& out);

}  // namespace kvcs::cli

#endif  // KVCS_CLI_MOQT_DEMO_H_
