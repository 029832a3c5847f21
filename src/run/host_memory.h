// Keeping freed host memory inside the process, as a caching allocator does.
//
// libtorch's CPU allocator is glibc's malloc. glibc serves blocks above its mmap threshold (at
// most 32 MiB) with a fresh mmap and unmaps them on free, and trims the heap top back to the
// kernel; a training step that frees and reallocates its activations then pays a page fault for
// every 4 KiB it touches again, every step (a fifth of the step time of a small GPT-2 on CPU,
// docs/performance.md). With mmap off and trimming pushed out, freed blocks are reused instead.
// The cost: the resident set stays at its peak, which is what a GPU caching allocator does too.
#pragma once

namespace sweepbench {

// Turns the behaviour above on for the rest of the process. False where the C library has no
// such controls (not glibc); nothing changes then.
bool keep_freed_host_memory();

}  // namespace sweepbench
