#include "run/host_memory.h"

#include <climits>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sweepbench {

bool keep_freed_host_memory() {
#if defined(__GLIBC__)
  // M_MMAP_MAX 0: large blocks come from the heap too (glibc still falls back to mmap when the
  // heap cannot grow). M_TRIM_THRESHOLD: only give memory back past 2 GiB free at the heap top.
  return mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
#else
  return false;
#endif
}

}  // namespace sweepbench
