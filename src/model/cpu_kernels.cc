// See cpu_kernels.h: picks, once, the build of cpu_kernels_loops.h that this CPU can run.
#include "model/cpu_kernels.h"

#include <atomic>
#include <stdexcept>

namespace sweepbench::cpu {

#define SWEEPBENCH_KERNELS_DECLARE(isa)                                                           \
  namespace isa {                                                                                 \
  double cross_entropy_rows(const float* logits, std::int64_t vocab, const std::int64_t* targets, \
                            std::int64_t begin, std::int64_t end, float* grad, float scale);      \
  }
SWEEPBENCH_KERNELS_DECLARE(base)
#if defined(__x86_64__)
SWEEPBENCH_KERNELS_DECLARE(avx2)
SWEEPBENCH_KERNELS_DECLARE(avx512)
#endif

namespace {
enum class Isa { kBase, kAvx2, kAvx512 };

struct IsaName {
  Isa isa;
  const char* name;
};
// Widest first.
constexpr IsaName kIsaNames[] = {
    {Isa::kAvx512, "avx512"}, {Isa::kAvx2, "avx2+fma"}, {Isa::kBase, "baseline"}};

bool cpu_has(Isa isa) {
#if defined(__x86_64__)
  // What the builds' -m flags let GCC emit: see src/CMakeLists.txt.
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  static const bool avx512 =
      avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  if (isa == Isa::kAvx512) return avx512;
  if (isa == Isa::kAvx2) return avx2;
#endif
  return isa == Isa::kBase;
}

Isa widest() {
  for (const IsaName& n : kIsaNames) {
    if (cpu_has(n.isa)) return n.isa;
  }
  return Isa::kBase;
}

std::atomic<Isa>& chosen() {
  static std::atomic<Isa> isa{widest()};
  return isa;
}
}  // namespace

// A statement: returns f of the chosen build.
#if defined(__x86_64__)
#define SWEEPBENCH_KERNELS_CALL(f, ...)               \
  switch (chosen().load(std::memory_order_relaxed)) { \
    case Isa::kAvx512:                                \
      return avx512::f(__VA_ARGS__);                  \
    case Isa::kAvx2:                                  \
      return avx2::f(__VA_ARGS__);                    \
    default:                                          \
      return base::f(__VA_ARGS__);                    \
  }
#else
#define SWEEPBENCH_KERNELS_CALL(f, ...) return base::f(__VA_ARGS__);
#endif

const char* instruction_set() {
  const Isa isa = chosen().load();
  for (const IsaName& n : kIsaNames) {
    if (n.isa == isa) return n.name;
  }
  return "baseline";
}

std::vector<std::string> instruction_sets() {
  std::vector<std::string> names;
  for (const IsaName& n : kIsaNames) {
    if (cpu_has(n.isa)) names.emplace_back(n.name);
  }
  return names;
}

void use_instruction_set(const std::string& name) {
  for (const IsaName& n : kIsaNames) {
    if (name == n.name && cpu_has(n.isa)) {
      chosen().store(n.isa);
      return;
    }
  }
  throw std::invalid_argument("cpu kernels: this CPU cannot run the " + name + " build");
}

double cross_entropy_rows(const float* logits, std::int64_t vocab, const std::int64_t* targets,
                          std::int64_t begin, std::int64_t end, float* grad, float scale) {
  SWEEPBENCH_KERNELS_CALL(cross_entropy_rows, logits, vocab, targets, begin, end, grad, scale);
}

}  // namespace sweepbench::cpu
