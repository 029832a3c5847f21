// What the two libtorch sides, the trainer (trainer.cc) and the generator (src/infer), share:
// failures as outcomes, the CPU memory budget that stands in for a full GPU in tests, the
// device's memory readings, and a parallel sum in a fixed order (model.cc's loss). Included only
// by translation units that include torch.
#pragma once

#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "train/trainer.h"

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

// libtorch's CPU allocator with a budget: it counts the bytes in use and fails an allocation past
// the budget with c10::OutOfMemoryError, as the CUDA caching allocator does on a full GPU. It is
// installed only for bench-train and bench-infer --max-memory-mb, so that running out of memory can
// be tested on a CPU; real runs never go through it. (An address-space limit cannot do this
// reliably: OpenBLAS retries a failed buffer allocation forever.)
class BudgetCpuAllocator final : public c10::Allocator {
 public:
  static BudgetCpuAllocator& install(std::int64_t budget) {
    static BudgetCpuAllocator allocator(c10::GetCPUAllocator());
    allocator.budget_ = budget;
    c10::SetCPUAllocator(&allocator, /*priority=*/255);
    return allocator;
  }

  c10::DataPtr allocate(size_t n) override { return allocate_counted(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

 private:
  struct Block {
    c10::DataPtr inner;
    std::int64_t bytes;
    const BudgetCpuAllocator* owner;
  };

  explicit BudgetCpuAllocator(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate_counted(size_t n) const {
    std::int64_t bytes = static_cast<std::int64_t>(n);
    std::int64_t before = in_use_.fetch_add(bytes);
    if (budget_ > 0 && before + bytes > budget_) {
      in_use_.fetch_sub(bytes);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU out of memory: tried to allocate ", bytes,
                       " bytes with ", before, " in use of a budget of ", budget_,
                       " bytes (--max-memory-mb)");
    }
    auto* block = new Block{base_->allocate(n), bytes, this};
    void* data = block->inner.get();
    return {data, block, &BudgetCpuAllocator::release, c10::Device(c10::DeviceType::CPU)};
  }

  static void release(void* context) {
    auto* block = static_cast<Block*>(context);
    block->owner->in_use_.fetch_sub(block->bytes);
    delete block;
  }

  c10::Allocator* base_;
  std::int64_t budget_ = 0;
  mutable std::atomic<std::int64_t> in_use_{0};
};

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

// The allocator's bytes in use and peak on a GPU, the resident set on a CPU.
MemoryReading device_memory(const torch::Device& device);
void reset_device_peak_memory(const torch::Device& device);
// Every parameter, in registration order, copied to the host as fp32.
std::vector<NamedArray> named_arrays(const torch::nn::Module& module);

}  // namespace sweepbench
