// bench-train's own CPU kernel for training (train.cpu_kernels), where libtorch's eager ops make
// several passes over memory for what is one pass: the head's cross-entropy with its gradient.
// A plain loop over float arrays, vectorised by the compiler (AVX-512 and AVX2 + FMA builds are
// picked at run time where the CPU has them); no torch here, the caller splits the work over
// libtorch's threads. It computes what the libtorch ops it replaces compute, to float rounding
// (tests/train/cpu_kernels_test.cc). The kernels that did not pay 5% of a step against
// libtorch 2.x's own ops on any shape we report (GELU, attention's softmax, AdamW, the gradient
// norm) were deleted: docs/performance.md has the measurements.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sweepbench::cpu {

// Rows [begin, end) of `logits` (row-major, `vocab` columns): the sum over those rows of
// logsumexp(row) - row[target] (cross-entropy), returned in double. When `grad` is not null, each
// row of it (same layout) becomes (softmax(row) - one_hot(target)) * scale: the gradient of the
// mean loss over N rows for scale = 1/N.
double cross_entropy_rows(const float* logits, std::int64_t vocab, const std::int64_t* targets,
                          std::int64_t begin, std::int64_t end, float* grad, float scale);

// The build the kernels run: "avx512" (AVX-512 F and DQ, with AVX2 and FMA), "avx2+fma" or
// "baseline"; the widest the CPU has unless use_instruction_set chose another.
const char* instruction_set();
// The builds this CPU can run, widest first.
std::vector<std::string> instruction_sets();
// Runs the named build (one of instruction_sets()) from now on, in every thread: for tests and
// benchmarks, which compare the builds. std::invalid_argument for a build the CPU cannot run.
void use_instruction_set(const std::string& name);

}  // namespace sweepbench::cpu
