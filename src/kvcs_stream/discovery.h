// Discovery: finding the publications of a prompt's prefix over a MoqtSession (profile §5.1).
//
// The consumer knows its Block Keys K_1..K_n. For the longest prefix it can use it sends
// SUBSCRIBE_NAMESPACE ("kvcs-1", scope_id, compat_id, K_n); every NAMESPACE answered (suffix:
// the pub_id) is one publication. When none exists it tries shorter prefixes (K_{n-1}, ...):
// those are siblings, not prefixes of each other, so `window` of them are in flight at once (no
// PREFIX_OVERLAP). A batch is settled `settle_ms` after its last answer (NAMESPACE messages
// follow REQUEST_OK on the request stream; MOQT has no end-of-listing marker); the longest
// prefix with a publication wins, and the walk stops there. A publication anchored beyond the
// caller's prompt cannot be found this way (the caller cannot compute its Anchor Key).
//
// Protocol logic only: time from `clock_ms`; the owner calls OnTimer() (an endpoint's timer or a
// test) and only OnTimer settles a batch. THREADING: the session's thread. LIFETIME: the
// MoqtSession outlives the Discovery; destroying it unsubscribes what is open and no callback
// fires after. The done callback may destroy the Discovery.
#ifndef KVCS_KVCS_STREAM_DISCOVERY_H_
#define KVCS_KVCS_STREAM_DISCOVERY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "common/status.h"
#include "kvcs_stream/cache_identity.h"
#include "moqt_session/moqt_session.h"
#include "profile/namespace.h"

namespace kvcs::stream {

struct DiscoveryOptions {
  uint64_t max_blocks = 0;  // the longest prefix tried (0: every full block of the prompt)
  uint64_t min_blocks = 1;  // the shortest prefix worth retrieving
  size_t window = 16;       // prefixes in flight at once
  uint64_t settle_ms = 50;  // after a batch's last answer, wait this long for NAMESPACEs
  uint64_t timeout_ms = 5000;
};

struct FoundPublication {
  profile::Namespace ns;
  uint64_t anchor_blocks = 0;  // the publication's segment 0 is the prompt's first blocks
};

struct DiscoveryResult {
  // The publications of the longest prefix that has any, in arrival order (empty: none found).
  std::vector<FoundPublication> publications;
  uint64_t prefixes_tried = 0;
  std::vector<Status> refusals;  // refused SUBSCRIBE_NAMESPACEs, malformed NAMESPACEs
  bool timed_out = false;
  const FoundPublication* best() const {
    return publications.empty() ? nullptr : &publications.front();
  }
};

class Discovery {
 public:
  using DoneCallback = std::function<void(const DiscoveryResult&)>;
  // Starts at once (the session must have completed SETUP). Errors: kInvalidArgument when the
  // prompt has no full block in [min_blocks, max_blocks]; the session refused the first request.
  static Result<std::unique_ptr<Discovery>> Start(moqt::MoqtSession* session,
                                                  const CacheIdentity& identity,
                                                  DiscoveryOptions options, DoneCallback on_done,
                                                  std::function<uint64_t()> clock_ms);
  ~Discovery();
  Discovery(const Discovery&) = delete;
  Discovery& operator=(const Discovery&) = delete;

  // Settles the current batch (or times out) when its time has come.
  void OnTimer();
  bool done() const { return done_; }
  const DiscoveryResult& result() const { return result_; }

  // Internal: the visitors' entry points.
  struct Probe;
  void OnAnswered(Probe& p, const std::optional<moqt::RequestError>& error);
  void OnNamespace(Probe& p, const moqt::TrackNamespace& suffix);

 private:
  Discovery(moqt::MoqtSession* session, const CacheIdentity& identity, DiscoveryOptions options,
            DoneCallback on_done, std::function<uint64_t()> clock_ms);
  Status StartBatch();
  void EndBatch();
  void Finish();

  moqt::MoqtSession* session_;
  const CacheIdentity identity_;
  DiscoveryOptions options_;
  DoneCallback on_done_;
  std::function<uint64_t()> clock_ms_;
  uint64_t next_blocks_ = 0;  // the longest prefix not tried yet (0: none left)
  uint64_t deadline_ms_ = 0;
  uint64_t last_answer_ms_ = 0;
  std::vector<std::shared_ptr<Probe>> batch_;
  std::map<uint64_t, std::vector<FoundPublication>> found_;  // by anchor_blocks
  bool done_ = false;
  DiscoveryResult result_;
};

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_DISCOVERY_H_
