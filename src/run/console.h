// What bench-train and bench-infer print: on rank 0 only, a line at a time, and its number formats.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

#include "text/text.h"  // with_commas

namespace sweepbench {

// Output on rank 0 only (llm.c's printf0), flushed per line so progress shows under mpirun.
class Console {
 public:
  explicit Console(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  __attribute__((format(printf, 2, 3))) void line(const char* format, ...) {
    if (!enabled_) return;
    va_list args;
    va_start(args, format);
    std::vprintf(format, args);
    va_end(args);
    std::printf("\n");
    std::fflush(stdout);
  }

 private:
  bool enabled_;
};

// 42.0 -> "42.0s", 125 -> "2m05s", 7300 -> "2h01m".
std::string duration_text(double s);
// A monotonic clock, in seconds.
double now_s();

}  // namespace sweepbench
