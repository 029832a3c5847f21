// A thread for collectives (train.overlap_comm). Included by trainer.cc and zero.h alone (no
// translation unit of its own).
#pragma once

#include <torch/torch.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace sweepbench {

// Runs collectives on a thread of its own, one after another in the order given, so that ZeRO's
// reduce-scatter of a bucket proceeds while backward computes the next one and a block's gather
// while the block before it computes (train.overlap_comm). MPI is initialised SERIALIZED: while
// the worker may be busy, every collective of the trainer goes through it, and the main thread
// calls MPI itself only after wait_all().
class CommWorker {
 public:
  CommWorker() : thread_([this] { loop(); }) {}
  ~CommWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  CommWorker(const CommWorker&) = delete;
  CommWorker& operator=(const CommWorker&) = delete;

  // A ticket for wait().
  std::uint64_t submit(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
    wake_.notify_all();
    return ++submitted_;
  }
  // Until the task of `ticket` (and every one before it) has run; rethrows a task's error.
  void wait(std::uint64_t ticket) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return done_ >= ticket; });
    if (error_) {
      std::exception_ptr e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
  }
  void wait_all() {
    std::uint64_t last;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      last = submitted_;
    }
    wait(last);
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, nothing left
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      std::exception_ptr failed;
      try {
        torch::NoGradGuard no_grad;
        task();
      } catch (...) {
        failed = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (failed && !error_) error_ = failed;
        ++done_;
      }
      done_cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_cv_;
  std::deque<std::function<void()>> queue_;
  std::uint64_t submitted_ = 0, done_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: starts after the rest is built
};

// Runs a collective: on the worker when there is one (then this thread waits for it, and the
// wait is the exposed time), else here. Every collective goes this way while a worker exists
// (MPI is initialised SERIALIZED).
inline void run_collective(CommWorker* worker, const std::function<void()>& run) {
  if (worker != nullptr) {
    worker->wait(worker->submit(run));
  } else {
    run();
  }
}

}  // namespace sweepbench
