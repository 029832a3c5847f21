// keep_freed_host_memory: a large block freed and allocated again is not page-faulted back in.
#include "run/host_memory.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>

namespace sweepbench {
namespace {

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

constexpr size_t kBytes = 64u << 20;  // above glibc's largest mmap threshold (32 MiB)
constexpr long kPages = static_cast<long>(kBytes / 4096);

// Allocates kBytes, writes one byte per page, frees; returns the minor faults that took.
long faults_to_touch_a_fresh_block() {
  long before = minor_faults();
  auto* p = static_cast<volatile char*>(std::malloc(kBytes));
  for (size_t i = 0; i < kBytes; i += 4096) p[i] = 1;
  std::free(const_cast<char*>(p));
  return minor_faults() - before;
}

TEST(HostMemory, AFreedBlockIsReusedWithoutPageFaults) {
#if defined(__GLIBC__)
  ASSERT_TRUE(keep_freed_host_memory());
  // The first block is new memory: every page faults once (this shows the counter counts).
  EXPECT_GE(faults_to_touch_a_fresh_block(), kPages / 2);
  // The second gets the same memory back from the heap. Without the setting glibc would have
  // unmapped the first and faulted all kPages in again.
  EXPECT_LT(faults_to_touch_a_fresh_block(), kPages / 16);
#else
  EXPECT_FALSE(keep_freed_host_memory());
#endif
}

}  // namespace
}  // namespace sweepbench
