// SweepOrphans: removes the RADOS objects of a store's namespace that nothing refers to any more
// and that are older than a grace period: stripes of versions no index entry and no part record
// names (a store killed mid-PUT before its publish, or after its publish but before it removed
// the version it replaced), and every object of a bucket id the registry no longer lists (a
// bucket delete cut short). docs/protocols/rados-backend.md, "Orphans".
//
// Safe while any number of stores serve the pool: a version is removed only when it is not
// referenced AND all its stripes are older than `grace_s`; a writer never publishes a version
// whose first stripe is older than kMaxWriteAgeS (rados_writer.h), so with grace_s well above
// that (the default is three times it) no version a writer may still publish is touched. Bounded:
// at most `max_objects` names are examined per pass.
#ifndef KVCS_RADOS_STORE_RADOS_SWEEP_H_
#define KVCS_RADOS_STORE_RADOS_SWEEP_H_

#include <cstdint>

#include "common/status.h"
#include "rados_store/rados_io.h"

namespace kvcs::rados_store {

inline constexpr double kDefaultSweepGraceS = 3 * 3600;

struct SweepOptions {
  // Seconds since an object's last write (the OSD's mtime) before it may be removed. Below
  // kMaxWriteAgeS plus the clock skew between hosts, a sweep may remove a slow PUT's stripes
  // (that PUT then fails); 0 is for tests and for a pool no store writes to.
  double grace_s = kDefaultSweepGraceS;
  // Object names examined in one pass at most.
  uint64_t max_objects = 1000000;
};

struct SweepStats {
  uint64_t examined = 0;      // object names listed
  uint64_t unreferenced = 0;  // objects nothing refers to
  uint64_t too_young = 0;     // of those, kept: within the grace period
  uint64_t removed = 0;       // removed
  bool complete = true;       // false: max_objects stopped the pass early
};

Result<SweepStats> SweepOrphans(RadosIo& io, const SweepOptions& options);

}  // namespace kvcs::rados_store

#endif  // KVCS_RADOS_STORE_RADOS_SWEEP_H_
