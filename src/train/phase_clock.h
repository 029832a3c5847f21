// Times the phases of a training step (forward, backward, communication, optimizer) for the
// steps table. Included by trainer.cc and zero.h alone (no translation unit of its own).
#pragma once

#include <ATen/record_function.h>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#ifdef SWEEPBENCH_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace sweepbench {

enum Phase { kForward, kBackward, kComm, kOptimizer, kPhases };

const char* const kPhaseNames[kPhases] = {"forward", "backward", "comm", "optimizer"};

// Times the phases of a step: CUDA events on a GPU (read once, after the step's final
// synchronisation, so timing never stalls the device), a steady clock on the CPU, where every
// operation has finished when it returns. A phase started while another runs (ZeRO-2 and 3 talk
// inside forward and backward) is nested: its time counts for it and not for the outer phase.
// While the profiler records, each phase is also a named range (a user scope) around libtorch's
// own op events; otherwise the range costs a check.
class PhaseClock {
 public:
  explicit PhaseClock(bool cuda) : cuda_(cuda) {}
  // From now on only the named ranges: a captured step (train.cuda_graph) runs its phases as one
  // graph, which no event can split; each phase then reads 0.
  void untimed() { timed_ = false; }
  void begin_range(Phase p) {
    // In place, no allocation: this runs a few times per step.
    ranges_[p].emplace(at::RecordScope::USER_SCOPE);
    if (ranges_[p]->isActive()) ranges_[p]->before(kPhaseNames[p]);
  }
  void end_range(Phase p) { ranges_[p].reset(); }
  void reset() {
    for (double& s : seconds_) s = 0;
    open_ = kPhases;
#ifdef SWEEPBENCH_WITH_CUDA
    for (auto& list : events_) list.clear();
    for (auto& list : nested_) list.clear();
#endif
  }
  void start(Phase p) {
    begin_range(p);
    if (!timed_) return;
    outer_[p] = open_;
    open_ = p;
#ifdef SWEEPBENCH_WITH_CUDA
    if (cuda_) {
      events_[p].push_back(std::make_shared<EventPair>());
      events_[p].back()->first.record();
      if (outer_[p] != kPhases) nested_[outer_[p]].push_back(events_[p].back());
      return;
    }
#endif
    started_[p] = std::chrono::steady_clock::now();
  }
  void stop(Phase p) {
    end_range(p);
    if (!timed_) return;
    open_ = outer_[p];
#ifdef SWEEPBENCH_WITH_CUDA
    if (cuda_) {
      events_[p].back()->second.record();
      return;
    }
#endif
    double d =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_[p]).count();
    seconds_[p] += d;
    if (outer_[p] != kPhases) seconds_[outer_[p]] -= d;
  }
  // Call after the device has finished the step.
  double seconds(Phase p) {
    if (!timed_) return 0;
#ifdef SWEEPBENCH_WITH_CUDA
    if (cuda_) {
      double total = 0;
      for (auto& pair : events_[p]) total += pair->first.elapsed_time(pair->second) / 1000.0;
      for (auto& pair : nested_[p]) total -= pair->first.elapsed_time(pair->second) / 1000.0;
      return total;
    }
#endif
    return seconds_[p];
  }

 private:
  bool cuda_;
  bool timed_ = true;
  std::optional<at::RecordFunction> ranges_[kPhases];
  double seconds_[kPhases] = {0, 0, 0, 0};
  Phase open_ = kPhases;  // the phase running now, or kPhases
  Phase outer_[kPhases] = {kPhases, kPhases, kPhases, kPhases};
  std::chrono::steady_clock::time_point started_[kPhases];
#ifdef SWEEPBENCH_WITH_CUDA
  struct EventPair {
    at::cuda::CUDAEvent first{cudaEventDefault}, second{cudaEventDefault};
  };
  std::vector<std::shared_ptr<EventPair>> events_[kPhases];
  std::vector<std::shared_ptr<EventPair>> nested_[kPhases];  // nested phases' pairs, subtracted
#endif
};

}  // namespace sweepbench
