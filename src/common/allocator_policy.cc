#include "common/allocator_policy.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kvcs {

void UseServerAllocatorPolicy() {
#if defined(__GLIBC__)
  // Setting M_MMAP_THRESHOLD explicitly also switches off glibc's dynamic adjustment of it.
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kServerMmapThresholdBytes));
#endif
}

}  // namespace kvcs
