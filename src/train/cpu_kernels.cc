// See cpu_kernels.h: picks, once, the build of cpu_kernels_loops.h that this CPU can run.
#include "train/cpu_kernels.h"

namespace sweepbench::cpu {

#define SWEEPBENCH_KERNELS_DECLARE(isa)                                                           \
  namespace isa {                                                                                 \
  double cross_entropy_rows(const float* logits, std::int64_t vocab, const std::int64_t* targets, \
                            std::int64_t begin, std::int64_t end, float* grad, float scale);      \
  void gelu_tanh(const float* x, float* y, std::int64_t n);                                       \
  void gelu_tanh_backward(const float* x, const float* dy, float* dx, std::int64_t n);            \
  void adamw(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamW& a);       \
  double sum_of_squares(const float* x, std::int64_t n);                                          \
  void causal_softmax(const float* s, float* p, std::int64_t t, std::int64_t cols,                \
                      std::int64_t offset, float scale, std::int64_t begin, std::int64_t end);    \
  void causal_softmax_backward(const float* p, const float* dp, float* ds, std::int64_t t,        \
                               std::int64_t cols, std::int64_t offset, float scale,               \
                               std::int64_t begin, std::int64_t end);                             \
  }
SWEEPBENCH_KERNELS_DECLARE(base)
#if defined(__x86_64__)
SWEEPBENCH_KERNELS_DECLARE(avx2)
#endif

namespace {
bool has_avx2() {
#if defined(__x86_64__)
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
#else
  return false;
#endif
}
}  // namespace

#if defined(__x86_64__)
#define SWEEPBENCH_KERNELS_CALL(f, ...) (has_avx2() ? avx2::f(__VA_ARGS__) : base::f(__VA_ARGS__))
#else
#define SWEEPBENCH_KERNELS_CALL(f, ...) base::f(__VA_ARGS__)
#endif

const char* instruction_set() { return has_avx2() ? "avx2+fma" : "baseline"; }

double cross_entropy_rows(const float* logits, std::int64_t vocab, const std::int64_t* targets,
                          std::int64_t begin, std::int64_t end, float* grad, float scale) {
  return SWEEPBENCH_KERNELS_CALL(cross_entropy_rows, logits, vocab, targets, begin, end, grad,
                                 scale);
}

void gelu_tanh(const float* x, float* y, std::int64_t n) {
  SWEEPBENCH_KERNELS_CALL(gelu_tanh, x, y, n);
}

void gelu_tanh_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  SWEEPBENCH_KERNELS_CALL(gelu_tanh_backward, x, dy, dx, n);
}

void causal_softmax(const float* s, float* p, std::int64_t t, std::int64_t cols,
                    std::int64_t offset, float scale, std::int64_t begin, std::int64_t end) {
  SWEEPBENCH_KERNELS_CALL(causal_softmax, s, p, t, cols, offset, scale, begin, end);
}

void causal_softmax_backward(const float* p, const float* dp, float* ds, std::int64_t t,
                             std::int64_t cols, std::int64_t offset, float scale,
                             std::int64_t begin, std::int64_t end) {
  SWEEPBENCH_KERNELS_CALL(causal_softmax_backward, p, dp, ds, t, cols, offset, scale, begin, end);
}

double sum_of_squares(const float* x, std::int64_t n) {
  return SWEEPBENCH_KERNELS_CALL(sum_of_squares, x, n);
}

void adamw(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamW& a) {
  SWEEPBENCH_KERNELS_CALL(adamw, p, g, m, v, n, a);
}

}  // namespace sweepbench::cpu
