// libtorch's CPU allocator, counted (CountingCpuAllocator). Its own header, with c10's allocator
// and nothing more of libtorch, so that device.cc, which reads it, compiles in seconds where a
// unit with <torch/torch.h> takes about 45 s.
#pragma once

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace sweepbench {

// libtorch's CPU allocator, counted: every CPU run of bench-train and bench-infer installs it
// before the model exists, so the memory stages can say how many bytes libtorch's CPU allocations
// hold and their peak (alloc_*_bytes, mem_alloc_peak_bytes): tensors' storage (once, however
// many views share it) and the buffers oneDNN takes through it, not what the math libraries
// allocate for themselves. The resident set cannot say it (glibc keeps freed memory, libtorch's
// threads have arenas of their own). With a budget (--max-memory-mb) it fails an allocation past
// it with c10::OutOfMemoryError, as the CUDA caching allocator does on a full GPU, so that running
// out of memory can be tested on a CPU. (An address-space limit cannot do this reliably: OpenBLAS
// retries a failed buffer allocation forever.) Allocations made before it was installed are
// neither counted nor discounted, and are freed by the allocator that made them.
class CountingCpuAllocator final : public c10::Allocator {
 public:
  // Installs it (once; it lives as long as the process, as libtorch keeps the pointer to the
  // end). Returns nullptr if libtorch kept another CPU allocator.
  static CountingCpuAllocator* install() {
    static CountingCpuAllocator* const allocator = new CountingCpuAllocator(c10::GetCPUAllocator());
    if (c10::GetCPUAllocator() != allocator) c10::SetCPUAllocator(allocator, /*priority=*/255);
    CountingCpuAllocator* active = c10::GetCPUAllocator() == allocator ? allocator : nullptr;
    installed_.store(active);
    return active;
  }
  static CountingCpuAllocator* installed() { return installed_.load(); }

  void set_budget(std::int64_t bytes) { budget_.store(bytes); }  // 0: none
  std::int64_t in_use() const { return in_use_.load(); }
  std::int64_t peak() const { return peak_.load(); }
  void reset_peak() { peak_.store(in_use_.load()); }

  c10::DataPtr allocate(size_t n) override {
    const c10::Device cpu(c10::DeviceType::CPU);
    std::int64_t bytes = static_cast<std::int64_t>(n);
    std::int64_t before = in_use_.fetch_add(bytes);
    std::int64_t budget = budget_.load();
    if (budget > 0 && before + bytes > budget) {
      in_use_.fetch_sub(bytes);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU out of memory: tried to allocate ", bytes,
                       " bytes with ", before, " in use of a budget of ", budget,
                       " bytes (--max-memory-mb)");
    }
    c10::DataPtr inner;
    try {
      inner = base_->allocate(n);
    } catch (...) {
      in_use_.fetch_sub(bytes);
      throw;
    }
    void* data = inner.get();
    if (data == nullptr) {  // nothing (zero bytes): a plain null pointer, as the base's
      in_use_.fetch_sub(bytes);
      return {nullptr, nullptr, &CountingCpuAllocator::release_plain, cpu};
    }
    if (inner.get_context() != data) {
      // Not a plain block (none of libtorch's CPU allocators): counted through a context.
      raise_peak(before + bytes);
      auto* block = new Block{std::move(inner), bytes, this};
      return {data, block, &CountingCpuAllocator::release_block, cpu};
    }
    // A plain block (data == context), which raw_allocate() needs and libtorch's bf16 paths use:
    // it stays one; its size and the base's deleter are looked up when it is freed.
    Shard& shard = shard_of(data);
    {
      std::lock_guard<std::mutex> lock(shard.mutex);
      shard.blocks[data] = Plain{bytes, inner.get_deleter()};
    }
    inner.release_context();
    raise_peak(before + bytes);
    return {data, data, &CountingCpuAllocator::release_plain, cpu};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &CountingCpuAllocator::release_plain; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

 private:
  struct Block {
    c10::DataPtr inner;
    std::int64_t bytes;
    CountingCpuAllocator* owner;
  };
  struct Plain {
    std::int64_t bytes;
    c10::DeleterFnPtr deleter;
  };
  // The plain blocks by address, in shards so that threads allocating at once rarely wait.
  struct Shard {
    std::mutex mutex;
    std::unordered_map<void*, Plain> blocks;
  };
  static constexpr size_t kShards = 64;

  explicit CountingCpuAllocator(c10::Allocator* base) : base_(base) { instance_ = this; }

  Shard& shard_of(void* data) {
    // Blocks are 64-byte aligned: the bits above the alignment spread them over the shards.
    return shards_[(reinterpret_cast<std::uintptr_t>(data) >> 6) % kShards];
  }

  void raise_peak(std::int64_t now) {
    std::int64_t seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
  }

  static void release_block(void* context) {
    auto* block = static_cast<Block*>(context);
    block->owner->in_use_.fetch_sub(block->bytes);
    delete block;
  }
  static void release_plain(void* data) {
    if (data == nullptr) return;
    CountingCpuAllocator* self = instance_;  // the one there is: blocks exist only once it does
    Shard& shard = self->shard_of(data);
    Plain p{0, nullptr};
    {
      std::lock_guard<std::mutex> lock(shard.mutex);
      auto it = shard.blocks.find(data);
      if (it != shard.blocks.end()) {
        p = it->second;
        shard.blocks.erase(it);
      }
    }
    if (p.deleter != nullptr) {
      self->in_use_.fetch_sub(p.bytes);
      p.deleter(data);
      return;
    }
    // Not ours: a raw block the base allocator gave before the install, freed through the
    // allocator in place now (oneDNN's buffers are). The base frees it, uncounted.
    if (c10::DeleterFnPtr base = self->base_->raw_deleter()) base(data);
  }

  c10::Allocator* base_;
  std::atomic<std::int64_t> budget_{0};
  std::atomic<std::int64_t> in_use_{0};
  std::atomic<std::int64_t> peak_{0};
  Shard shards_[kShards];
  static inline std::atomic<CountingCpuAllocator*> installed_{nullptr};
  static inline CountingCpuAllocator* instance_ = nullptr;
};

}  // namespace sweepbench
