// bench-train's own CPU kernels for fp32 training (train.cpu_kernels), where libtorch's eager
// ops make several passes over memory for what is one pass: the head's cross-entropy with its
// gradient, the tanh GELU and its gradient, and the AdamW update. Plain loops over float arrays,
// vectorised by the compiler (AVX-512 and AVX2 + FMA builds are picked at run time where the CPU
// has them); no torch here, the caller splits the work over libtorch's threads. Each computes
// what the libtorch ops it replaces compute, to float rounding (tests/train/cpu_kernels_test.cc).
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

// GPT-2's GELU, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), over n elements.
void gelu_tanh(const float* x, float* y, std::int64_t n);
// dx = dy * d gelu(x) / dx, over n elements.
void gelu_tanh_backward(const float* x, const float* dy, float* dx, std::int64_t n);
// Both over bf16 values (their raw bits): computed in fp32, rounded to nearest even, as
// libtorch computes bf16's GELU.
void gelu_tanh_bf16(const std::uint16_t* x, std::uint16_t* y, std::int64_t n);
void gelu_tanh_backward_bf16(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                             std::int64_t n);

// Causal attention's softmax over rows [begin, end) of scores (B, H, T, S) laid out as rows of
// `cols` = S: row r is query t_i = r % t, at position offset + t_i, which sees keys 0 .. offset +
// t_i. p = softmax(scale * s) over those keys and 0 past them: what scaling, masking with -inf
// and softmax make, in one pass, and no mask.
void causal_softmax(const float* s, float* p, std::int64_t t, std::int64_t cols,
                    std::int64_t offset, float scale, std::int64_t begin, std::int64_t end);
// Its gradient: ds = scale * p * (dp - sum_j p_j dp_j) over the keys a row sees, 0 past them.
void causal_softmax_backward(const float* p, const float* dp, float* ds, std::int64_t t,
                             std::int64_t cols, std::int64_t offset, float scale,
                             std::int64_t begin, std::int64_t end);

// The sum of x[i]^2 over n elements: float sums of 256 elements (32 per vector lane) added up
// in double, so the relative error stays about 1e-7 however large n is.
double sum_of_squares(const float* x, std::int64_t n);

// One AdamW step (decoupled weight decay) over n elements, in torch.optim.AdamW's order, on the
// gradient scaled first as gradient clipping scales it (g = grad_scale * gradient, rounded):
// p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p += -lr / bc1 * m / (sqrt(v) / bc2_sqrt + eps). The gradient is read only.
struct AdamW {
  float lr, weight_decay, beta1, beta2, eps;
  float bias_correction1;       // 1 - beta1^t
  float bias_correction2_sqrt;  // sqrt(1 - beta2^t)
  float grad_scale = 1.0f;      // clipping's min(1, clip / norm)
};
void adamw(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamW& a);

// The kernels by name, so that a benchmark can measure each against libtorch's own op in one
// run (bench/cpu_kernels_vs_torch.py): SWEEPBENCH_CPU_KERNELS_OFF=attention,adamw in the
// environment, read once, turns those off where train.cpu_kernels would use them. The names:
// loss (the head's cross-entropy), gelu, attention (causal softmax), adamw, norm (the gradient
// norm's sum of squares).
enum class Kernel { kLoss, kGelu, kAttention, kAdamW, kNorm };
bool kernel_enabled(Kernel k);

// The build the kernels run: "avx512" (AVX-512 F and DQ, with AVX2 and FMA), "avx2+fma" or
// "baseline"; the widest the CPU has unless use_instruction_set chose another.
const char* instruction_set();
// The builds this CPU can run, widest first.
std::vector<std::string> instruction_sets();
// Runs the named build (one of instruction_sets()) from now on, in every thread: for tests and
// benchmarks, which compare the builds. std::invalid_argument for a build the CPU cannot run.
void use_instruction_set(const std::string& name);

}  // namespace sweepbench::cpu
