// The heap policy of kvcs's long-running servers (store, index, relay): memory that stays flat
// under sustained load. See docs/protocols/http.md, "Memory under sustained load".
#ifndef KVCS_COMMON_ALLOCATOR_POLICY_H_
#define KVCS_COMMON_ALLOCATOR_POLICY_H_

#include <cstddef>

namespace kvcs {

// Allocations at or above this size get their own mapping, returned to the system when freed.
// 128 KiB is glibc's initial threshold: request bodies, aggregated-GET block buffers (256 KiB and
// up) and read windows sit above it, small per-request objects below it.
inline constexpr size_t kServerMmapThresholdBytes = 128 << 10;

// Pins the allocator's mmap threshold at kServerMmapThresholdBytes. glibc otherwise raises the
// threshold to the largest mapped block freed so far (up to 32 MiB), after which every transient
// large buffer is carved from the per-thread arenas; those fragment and never shrink, and a
// store's RSS climbed for as long as the load lasted (bench/load: 57 → 109 MiB over 16 min, with
// 106 MiB in use throughout). Call once at the start of a server process; a no-op off glibc.
void UseServerAllocatorPolicy();

}  // namespace kvcs

#endif  // KVCS_COMMON_ALLOCATOR_POLICY_H_
