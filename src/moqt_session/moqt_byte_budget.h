// ByteBudget: one byte limit shared by every Track of a process (pass the same
// shared_ptr<ByteBudget> in TrackOptions::budget, or to TrackStore, which gives it to the tracks
// it creates). A Track charges each object's payload plus kTrackObjectOverheadBytes, and each
// group kTrackGroupOverheadBytes, and releases the charge when it evicts the group or dies.
//
// Eviction and refusal (moqt_track.h): a write that would take the budget past its limit first
// evicts the writing track's own oldest groups (never the group written to, never the newest);
// when that cannot free enough (the bytes are held by other tracks, or by the groups that must
// stay) the write is refused with TrackError::kBudgetExhausted and nothing is evicted or stored.
// A Track never evicts another Track's groups: whoever owns a set of tracks (a relay's cache)
// decides which of them to drop.
// THREADING: single-threaded, like the tracks and sessions that use it (one executor).
#ifndef KVCS_MOQT_SESSION_MOQT_BYTE_BUDGET_H_
#define KVCS_MOQT_SESSION_MOQT_BYTE_BUDGET_H_

#include <cstdint>

namespace kvcs::moqt {

// Memory a stored object costs beyond its payload: its std::map node (three links, colour and
// the 8-byte key: ~40 B), the PublishedObject itself (Location, priority, status, an empty
// Properties vector and the payload shared_ptr: ~80 B), and the payload's own allocation
// (shared_ptr control block plus the Bytes vector header: ~48 B), rounded up for allocator slack.
inline constexpr uint64_t kTrackObjectOverheadBytes = 192;
// Memory a group costs beyond its objects: its std::map node in the Track plus the Group (an
// empty object map, flags and counters), rounded up for allocator slack.
inline constexpr uint64_t kTrackGroupOverheadBytes = 128;

class ByteBudget {
 public:
  explicit ByteBudget(uint64_t limit) : limit_(limit) {}
  ByteBudget(const ByteBudget&) = delete;
  ByteBudget& operator=(const ByteBudget&) = delete;

  uint64_t limit() const { return limit_; }
  uint64_t used() const { return used_; }
  // Whether charging `more` fits once `freed` (REQUIRES <= used()) is released.
  bool Fits(uint64_t more, uint64_t freed) const { return used_ - freed + more <= limit_; }
  void Charge(uint64_t bytes) { used_ += bytes; }
  void Release(uint64_t bytes) { used_ -= bytes; }

 private:
  uint64_t limit_;
  uint64_t used_ = 0;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_BYTE_BUDGET_H_
