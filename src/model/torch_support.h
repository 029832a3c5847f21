// What the two libtorch sides, the trainer (trainer.cc) and the generator (src/infer), share:
// failures as outcomes, the counted CPU allocator (counting_allocator.h) and the device
// (device.h), the parameters copied out, and a parallel sum in a fixed order (model.cc's loss).
// Included only by translation units that include torch.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/counting_allocator.h"  // IWYU pragma: export
#include "model/device.h"              // IWYU pragma: export
#include "model/outcome.h"

namespace sweepbench {

// The sum of part(0) .. part(parts - 1), computed over libtorch's threads and added in the order
// of the parts: the same total whatever the thread count (a reduction in thread order is not).
template <typename Part>
double fixed_order_parallel_sum(std::int64_t parts, const Part& part) {
  std::vector<double> partial(static_cast<size_t>(parts), 0.0);
  at::parallel_for(0, parts, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) partial[static_cast<size_t>(i)] = part(i);
  });
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

inline bool is_out_of_memory(const std::string& what) {
  return what.find("out of memory") != std::string::npos ||
         what.find("can't allocate memory") != std::string::npos ||
         what.find("Cannot allocate memory") != std::string::npos;
}

// The first line of an exception's text (libtorch appends a C++ backtrace).
inline std::string first_line(const std::string& what) { return what.substr(0, what.find('\n')); }

// Runs `body`; failures become an outcome instead of an exception.
template <typename F>
PhaseStatus guarded(F&& body) {
  try {
    body();
    return {};
  } catch (const c10::OutOfMemoryError& e) {
    return {Outcome::kOom, first_line(e.what())};
  } catch (const std::bad_alloc&) {
    return {Outcome::kOom, "std::bad_alloc: the host is out of memory"};
  } catch (const c10::Error& e) {
    std::string what = first_line(e.what_without_backtrace());
    return {is_out_of_memory(what) ? Outcome::kOom : Outcome::kFailed, what};
  } catch (const std::exception& e) {
    std::string what = first_line(e.what());
    return {is_out_of_memory(what) ? Outcome::kOom : Outcome::kFailed, what};
  }
}

// Every parameter, in registration order, copied to the host as fp32.
std::vector<NamedArray> named_arrays(const torch::nn::Module& module);

}  // namespace sweepbench
