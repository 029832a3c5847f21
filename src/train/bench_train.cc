// bench-train's orchestration: config, agreement between ranks, the measured loop, evaluation,
// results. Torch-free: the training step is behind trainer.h.
//
// Agreement: ranks must never wait forever for a peer that failed. So after every phase that can
// fail on one rank alone (reading the config, building the model, forward/backward, the
// optimizer, an evaluation batch) and at every step (for signals) the ranks all-reduce one small
// status, the most severe wins, and every rank then takes the same path: on to the collective
// gradient all-reduce, or straight to writing its results with the agreed status.
#include "train/bench_train.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <thread>

#include "config/config.h"
#include "config/model_shapes.h"
#include "config/settings.h"
#include "config/yaml_io.h"
#include "metrics/statistics.h"
#include "metrics/summary.h"
#include "model/cpu_kernels.h"
#include "os/clean_env.h"
#include "os/fs.h"
#include "os/hardware.h"
#include "os/run_info.h"
#include "os/sampler.h"
#include "results/rank_file.h"
#include "run/bench_run.h"
#include "run/console.h"
#include "run/data.h"
#include "run/host_memory.h"
#include "run/mpi_env.h"
#include "run/program_args.h"
#include "run/run_status.h"
#include "text/error.h"
#include "text/text.h"
#include "train/train_plan.h"
#include "train/trainer.h"

namespace sweepbench {

const char* const kUsage =
    R"(bench-train: benchmark LLM training on this rank's device; run it under
mpirun -n N, srun --mpi=pmix -n N, or alone for one rank.

Usage: bench-train --config POINT.yaml --out DIR [--set KEY=VALUE]... [--max-memory-mb N]

Trains the model of POINT.yaml (a point config, as bench-sweep plan --out writes) for train.steps
steps, the first train.warmup_steps excluded from every statistic, then evaluates for eval.steps
batches. Each rank writes DIR/rank-NNNNN.h5 (docs/results-format.md); rank 0 prints progress, a
summary table and writes DIR/summary.json. Existing results are never overwritten.

Examples:
  bench-train --config runs/qs/micro_batch=2.seq_len=32.ws=1.57ed52f2/config.yaml --out /tmp/r
  mpirun -n 2 bench-train --config point.yaml --set train.steps=20 --out runs/two-ranks

Exit codes: 0 ok, 2 bad arguments or config, 3 results already there, 4 cannot write,
20 out of memory, 21 time limit (SIGTERM/SIGUSR1), 22 failed, 23 interrupted (SIGINT/SIGUSR2).

Options:
)";
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

class Run {
 public:
  Run(const Args& args, MpiEnv& mpi) : args_(args), mpi_(mpi), console_(mpi.rank() == 0) {}

  int execute() {
    since_start_.start();  // what other processes use of the CPUs, until the threads are chosen
    // 1. Everything that can be wrong with the inputs, before any work; nothing is written yet.
    {
      int local = 0;
      std::string message;
      try {
        plan_ = make_plan(args_, mpi_);
        device_ = select_device(plan_.trainer.device_options());
        profile_activities_ = resolve_profile_activities(plan_, device_);
        // The ranks of a tensor-parallel group read the same batches.
        data_ = open_token_source(plan_.data, data_rank(), data_parallel());
      } catch (const Error& e) {
        local = sweepbench::exit_code_for(e.kind());
        message = error_line(e, "bench-train");
      }
      if (int code = agree_on_start(local, message)) return code;
      // Only now, with every rank's inputs good, is anything created; and every rank checks
      // that it can write there before the run rather than after it.
      try {
        make_directories(args_.out);
        check_writable_directory(args_.out);
      } catch (const Error& e) {
        local = sweepbench::exit_code_for(e.kind());
        message = error_line(e, "bench-train");
      }
      if (int code = agree_on_start(local, message)) return code;
    }
    choose_threads();
    fill_identity();
    banner();

    sampler_ = std::make_unique<ResourceSampler>(
        static_cast<int>(plan_.settings.metrics.sample_interval_ms), device_.pci_bus_id,
        plan_.settings.metrics.system);
    sampler_->start();  // the baseline sample

    RunStatus status = build();
    if (status == RunStatus::kOk) status = train();
    if (status == RunStatus::kOk && plan_.settings.eval.steps > 0) status = evaluate();
    sampler_->stop();
    return finish(status);
  }

 private:
  // Fewer threads where other processes already use the CPUs (bench_run.h).
  void choose_threads() {
    choose_threads_beside_neighbours(since_start_, mpi_,
                                     plan_.settings.launch.cpus_per_rank.has_value(), device_,
                                     result_, "bench-train");
    plan_.trainer.threads = device_.threads;
  }

  int agree_on_start(int local, const std::string& message) {
    return agreement_.on_start(local, message);
  }
  RunStatus agree(RunStatus local, const std::string& reason) {
    return agreement_.agree(local, reason);
  }

  RunStatus build() {
    stages_.before_init();
    stages_.begin("init");
    RunStatus local = RunStatus::kOk;
    std::string reason;
    // Before the model allocates anything, so its blocks come from the reusable heap.
    if (plan_.settings.launch.malloc_cache) keep_freed_host_memory();
    try {
      trainer_ = make_trainer(plan_.trainer, mpi_);
    } catch (const ModelInitError& e) {
      local = from_outcome(e.outcome());
      reason = std::string("building the model: ") + e.what();
    }
    RunStatus agreed = agree(local, reason);
    if (trainer_) {
      result_.memory_stage_source = trainer_->memory_source();
      result_.parameter_count = trainer_->parameter_count();
      result_.trainable_parameters = trainer_->trainable_parameter_count();
      result_.rank_parameters = trainer_->rank_parameter_count();
      result_.zero_stage = static_cast<int>(plan_.settings.train.zero_stage);
      result_.model_state_bytes = trainer_->model_state_bytes();
      result_.threads = trainer_->device().threads;
    }
    stages_.end();
    return agreed;
  }

  // A batch the host cannot hold is out of memory like any other allocation, not a crash.
  template <typename F>
  static PhaseStatus load_batches(F&& load) {
    try {
      load();
      return {};
    } catch (const std::bad_alloc&) {
      return {Outcome::kOom, "loading a batch: std::bad_alloc: the host is out of memory"};
    } catch (const std::length_error& e) {
      return {Outcome::kOom, std::string("loading a batch: ") + e.what()};
    }
  }

  RunStatus train() {
    const std::int64_t tokens_per_step =
        plan_.settings.train.micro_batch * plan_.trainer.seq_len * plan_.settings.train.grad_accum;
    const std::int64_t global_tokens = tokens_per_step * data_parallel();
    stages_.begin("train");
    RunStatus status = RunStatus::kOk;
    double started = now_s();
    double measured_time = 0, measured_comm_bytes = 0;
    std::int64_t measured_steps = 0;
    // With metrics.target_ci the run goes on past train.steps until its step times are precise
    // enough (metrics/statistics.h) or metrics.max_seconds of measured steps are spent.
    size_t look = 0;  // the measured steps at which to look next
    for (std::int64_t step = 0;; ++step) {
      if (step >= plan_.settings.train.steps &&
          !keep_measuring(static_cast<size_t>(measured_steps), measured_time, &look)) {
        break;
      }
      const bool profiled = step >= plan_.profile_first && step <= plan_.profile_last;
      if (step == plan_.settings.train.warmup_steps) cpu_share_.start();
      if (step == plan_.profile_first && profiled) {
        trainer_->start_profile(profile_activities_);
        profiling_ = true;
      }
      double t0 = now_s();
      std::vector<Batch> batches;
      PhaseStatus fb = load_batches([&] {
        for (std::int64_t i = 0; i < plan_.settings.train.grad_accum; ++i)
          batches.push_back(data_->next_train(plan_.settings.train.micro_batch));
      });
      double data_s = now_s() - t0;

      if (fb.outcome == Outcome::kOk) fb = trainer_->forward_backward(batches);
      RunStatus local = fb.outcome != Outcome::kOk ? from_outcome(fb.outcome) : signal_status();
      status = agree(local, fb.outcome != Outcome::kOk ? fb.reason : "received " + signal_text());
      if (status >= RunStatus::kOom) break;  // no update: the step is lost on every rank

      PhaseStatus up = trainer_->update(plan_.settings.train.lr);
      StepTiming timing = trainer_->finish_step();
      StepRecord r;
      r.step = step;
      r.total_s = now_s() - t0;
      r.data_s = data_s;
      r.forward_s = timing.forward_s;
      r.backward_s = timing.backward_s;
      r.comm_s = timing.comm_s;
      r.optimizer_s = timing.optimizer_s;
      r.tokens = tokens_per_step;
      r.samples = plan_.settings.train.micro_batch * plan_.settings.train.grad_accum;
      r.loss = timing.loss;
      r.lr = plan_.settings.train.lr;
      r.grad_norm = timing.grad_norm;
      r.loss_scale = timing.loss_scale;
      r.skipped = timing.skipped;
      // Profiled steps carry the profiler's cost: left out of every statistic, as the warm-up.
      r.measured = step >= plan_.settings.train.warmup_steps && !profiled;
      if (profiled && step == plan_.profile_last) write_profile();
      result_.steps.push_back(r);
      if (r.measured) {
        measured_time += r.total_s;
        measured_comm_bytes += timing.comm_bytes;
        ++measured_steps;
      }
      if (up.outcome != Outcome::kOk) {
        // The optimizer failed here; the peers learn it at the next agreement.
        pending_ = from_outcome(up.outcome);
        pending_reason_ = "optimizer step: " + up.reason;
      }
      progress(step, r, global_tokens, started, measured_time, measured_steps);
      if (pending_ != RunStatus::kOk) {
        status = agree(pending_, pending_reason_);
        break;
      }
      if (status != RunStatus::kOk) break;  // a signal: this step finished, stop here
    }
    if (status == RunStatus::kOk) status = agree(pending_, pending_reason_);  // the last update
    cpu_share_.finish(mpi_, result_);  // every rank: it reduces over the node
    if (measured_steps > 0) {
      result_.comm_bytes_per_step = measured_comm_bytes / static_cast<double>(measured_steps);
    }
    // A run that ended inside the profiled steps keeps what was traced.
    if (profiling_) write_profile();
    stages_.end();
    return status;
  }

  // Rank r's trace to DIR/profile/rank-NNNNN.pt.trace.json, never over an existing file. A trace
  // that cannot be written costs the trace, not the run: said on stderr.
  void write_profile() {
    profiling_ = false;
    const std::string relative = profile_trace_path(mpi_.rank());
    fs::path path = fs::path(plan_.rank_path).parent_path() / relative;
    try {
      make_directories(path.parent_path().string());
      // The profiler (Kineto's save()) writes a file by name: the temporary one, renamed after.
      AtomicFile file(path.string(), AtomicFile::Kind::kNamed);
      trainer_->stop_profile(file.temporary_path());
      std::error_code ec;
      if (fs::exists(path, ec)) {
        throw Error(ErrorKind::kConflict, Mark::in(path.string()), "", "a trace is already there");
      }
      file.commit();
      result_.profile_trace = relative;
    } catch (const Error& e) {
      trainer_->stop_profile("");  // if it failed before the profiler stopped
      std::fprintf(stderr, "bench-train: rank %d: the profile was not written: %s\n", mpi_.rank(),
                   e.what());
    }
  }

  RunStatus evaluate() {
    stages_.begin("eval");
    RunStatus status = RunStatus::kOk;
    double t0 = now_s();
    double loss_sum = 0;
    EvalSummary& e = result_.eval;
    for (std::int64_t i = 0; i < plan_.settings.eval.steps; ++i) {
      double b0 = now_s();
      Batch batch;
      EvalOutput out;
      out.status = load_batches([&] { batch = data_->next_eval(plan_.settings.eval.micro_batch); });
      if (out.status.outcome == Outcome::kOk) out = trainer_->evaluate(batch);
      RunStatus local =
          out.status.outcome != Outcome::kOk ? from_outcome(out.status.outcome) : signal_status();
      status = agree(local, out.status.outcome != Outcome::kOk ? "evaluation: " + out.status.reason
                                                               : "received " + signal_text());
      if (status >= RunStatus::kOom) break;
      e.batch_loss.push_back(out.loss);
      e.batch_s.push_back(now_s() - b0);
      loss_sum += out.loss;
      ++e.steps;
      e.samples += batch.batch;
      e.tokens += batch.batch * batch.seq;
      if (status != RunStatus::kOk) break;
    }
    e.seconds = now_s() - t0;
    e.ran = e.steps > 0;
    // The evaluation loss is the mean over every rank's batches.
    double totals[2] = {loss_sum, static_cast<double>(e.steps)};
    mpi_.allreduce_sum(totals, 2);
    e.loss = totals[1] > 0 ? totals[0] / totals[1] : 0;
    stages_.end();
    return status;
  }

  void fill_identity() {
    RankResult& r = result_;
    sweepbench::fill_identity(r, mpi_, device_, "train");
    r.config_yaml = plan_.config_yaml;
    r.config_hash = plan_.config_hash;
    r.tag = plan_.tag;
    const ModelShape& s = plan_.trainer.shape;
    r.parameter_count = parameter_count(s);
    r.flops_per_token = training_flops_per_token(s, plan_.trainer.seq_len);
    if (plan_.settings.train.lora()) {
      // LoRA: no weight gradients for the frozen matrices (docs/metrics.md).
      const std::int64_t adapters =
          lora_parameter_count(s, plan_.settings.train.lora_r, plan_.settings.train.lora_targets);
      r.parameter_count += adapters;
      r.trainable_parameters = adapters;
      r.flops_per_token = lora_training_flops_per_token(s, plan_.trainer.seq_len, adapters);
    }
    r.flops_per_token_6n = training_flops_per_token_6n(s);
    DevicePeak peak =
        resolve_peak(plan_.settings.hardware.peak_tflops, device_.type == "cuda",
                     peak_tflops_for(device_.name, to_string(plan_.settings.train.dtype)));
    r.peak_tflops = peak.value;
    r.peak_tflops_source = peak.source;
    r.steps_planned = plan_.settings.train.steps;
    r.warmup_steps = plan_.settings.train.warmup_steps;
    r.seq_len = plan_.trainer.seq_len;
    r.micro_batch = plan_.settings.train.micro_batch;
    r.grad_accum = plan_.settings.train.grad_accum;
    r.tensor_parallel = plan_.trainer.tensor_parallel;
    r.offload_optimizer = plan_.settings.train.offload_optimizer ? 1 : 0;
  }

  // Tensor parallelism: groups of t consecutive ranks hold one model replica between them.
  int data_parallel() const {
    return mpi_.size() / static_cast<int>(std::max<std::int64_t>(1, plan_.trainer.tensor_parallel));
  }
  int data_rank() const {
    return mpi_.rank() / static_cast<int>(std::max<std::int64_t>(1, plan_.trainer.tensor_parallel));
  }

  void banner() {
    if (!console_.enabled()) return;
    const ModelShape& s = plan_.trainer.shape;
    // Which build of cpu_kernels.h runs, where it runs: figures differ between them.
    const std::string kernels = plan_.settings.train.cpu_kernels && device_.type == "cpu" &&
                                        (plan_.settings.train.dtype != DType::kFp16)
                                    ? std::string(", cpu kernels ") + cpu::instruction_set()
                                    : std::string();
    console_.line(
        "# bench-train %s: %s (%s, %.2fM parameters), %d rank(s), %s (%s), %s, %d thread(s)/rank%s",
        SWEEPBENCH_VERSION, plan_.settings.model_preset.c_str(), s.arch.c_str(),
        static_cast<double>(parameter_count(s)) / 1e6, mpi_.size(), device_.type.c_str(),
        device_.name.c_str(), to_string(plan_.settings.train.dtype).c_str(), device_.threads,
        kernels.c_str());
    console_.line(
        "# per rank and step: micro batch %lld x seq %lld x accum %lld = %s tokens; %lld steps, "
        "the first %lld warm-up; eval %lld batches",
        static_cast<long long>(plan_.settings.train.micro_batch),
        static_cast<long long>(plan_.trainer.seq_len),
        static_cast<long long>(plan_.settings.train.grad_accum),
        with_commas(static_cast<double>(plan_.settings.train.micro_batch * plan_.trainer.seq_len *
                                        plan_.settings.train.grad_accum))
            .c_str(),
        static_cast<long long>(plan_.settings.train.steps),
        static_cast<long long>(plan_.settings.train.warmup_steps),
        static_cast<long long>(plan_.settings.eval.steps));
    console_.line("# data: %s", data_->describe().c_str());
    console_.line("#  %11s  %9s  %12s  %7s  %8s", "step", "loss", "tokens/s", "mfu", "eta");
  }

  // The steps every statistic counts: past the warm-up, not profiled.
  std::vector<StepRecord> measured_records() const {
    std::vector<StepRecord> out;
    for (const StepRecord& s : result_.steps) {
      if (s.measured) out.push_back(s);
    }
    return out;
  }

  // Past train.steps with metrics.target_ci: whether to run another step. Between looks yes; at a
  // look (the same step on every rank: they measure the same steps) the ranks decide together,
  // going on while any rank's steps fall short of the target and the slowest rank's measured time
  // is within the budget. The look after is half as many steps again, or sooner where the budget
  // would be spent before it.
  // `measured`: the measured steps so far, `measured_time` their time on this rank.
  bool keep_measuring(size_t measured, double measured_time, size_t* look) {
    const std::optional<double> target = plan_.settings.metrics.target_ci;
    if (!target) return false;
    if (measured < *look) return true;
    const bool precise = precise_enough(column(measured_records(), &StepRecord::total_s), *target);
    double state[2] = {precise ? 0.0 : 1.0, measured_time};
    mpi_.allreduce_max(state, 2);
    const double budget = plan_.settings.metrics.max_seconds;
    if (state[0] == 0 || state[1] >= budget) return false;
    *look = next_look(measured);
    if (measured > 0 && state[1] > 0) {
      const double per_step = state[1] / static_cast<double>(measured);
      const double left = std::ceil((budget - state[1]) / per_step);
      *look = std::min(*look, measured + static_cast<size_t>(std::max(1.0, left)));
    }
    return true;
  }

  void progress(std::int64_t step, const StepRecord& r, std::int64_t global_tokens, double started,
                double measured_time, std::int64_t measured_steps) {
    bool last = step + 1 == plan_.settings.train.steps;
    if (!console_.enabled() || (!last && (step + 1) % plan_.settings.metrics.log_every != 0))
      return;
    double tps = static_cast<double>(global_tokens) / r.total_s;
    std::string mfu = "-";
    if (result_.peak_tflops > 0) {
      char buf[16];
      double tflops = result_.flops_per_token * tps / mpi_.size() / 1e12;
      std::snprintf(buf, sizeof(buf), "%.1f%%", 100.0 * tflops / result_.peak_tflops);
      mfu = buf;
    }
    double per_step = measured_steps > 0 ? measured_time / static_cast<double>(measured_steps)
                                         : (now_s() - started) / static_cast<double>(step + 1);
    // Past train.steps (measuring until precise) the end is the target's: no estimate.
    double eta = per_step * static_cast<double>(
                                std::max<std::int64_t>(0, plan_.settings.train.steps - step - 1));
    char step_text[32];
    std::snprintf(step_text, sizeof(step_text), "%lld/%lld", static_cast<long long>(step + 1),
                  static_cast<long long>(plan_.settings.train.steps));
    console_.line("   %11s  %9.4f  %12s  %7s  %8s", step_text, r.loss, with_commas(tps).c_str(),
                  mfu.c_str(), duration_text(eta).c_str());
  }

  int finish(RunStatus status) {
    RankResult& r = result_;
    r.end_time = utc_now_iso8601();
    r.status = status_name(status);
    r.reason = agreement_.reason();
    r.rank_status = agreement_.rank_status();
    // What the model's states hold after the last step: ZeRO-2's gradients and ZeRO-3's gathered
    // blocks are freed between uses, so this is what stays, as the accounting counts it.
    if (trainer_) r.model_state_bytes = trainer_->model_state_bytes();
    if (trainer_ && r.parameter_count <= kDigestLimit)
      r.parameter_sha256 = trainer_->parameter_sha256();
    take_samples(*sampler_, r);

    // The summary: step times are the slowest rank's. Every rank recorded the same steps.
    const std::vector<StepRecord> measured = measured_records();
    SummaryInput in;
    in.step_s = column(measured, &StepRecord::total_s);
    in.data_s = column(measured, &StepRecord::data_s);
    in.forward_s = column(measured, &StepRecord::forward_s);
    in.backward_s = column(measured, &StepRecord::backward_s);
    in.comm_s = column(measured, &StepRecord::comm_s);
    in.optimizer_s = column(measured, &StepRecord::optimizer_s);
    for (auto* v :
         {&in.step_s, &in.data_s, &in.forward_s, &in.backward_s, &in.comm_s, &in.optimizer_s}) {
      mpi_.allreduce_max(v->data(), v->size());
    }
    fill_run_description(in, r);  // as bench-extract does from rank 0's file
    double last_loss[1] = {measured.empty() ? 0.0 : measured.back().loss};
    mpi_.allreduce_sum(last_loss, 1);
    in.train_loss = last_loss[0] / mpi_.size();
    in.has_eval = r.eval.ran;
    in.eval_loss = r.eval.loss;
    double eval_samples[1] = {static_cast<double>(r.eval.samples)};
    mpi_.allreduce_sum(eval_samples, 1);
    in.eval_samples = eval_samples[0];
    double eval_seconds[1] = {r.eval.seconds};
    mpi_.allreduce_max(eval_seconds, 1);
    in.eval_seconds = eval_seconds[0];
    // The allocator's (or the RSS's) peak and the counted tensors' over all stages and ranks.
    double peaks[2] = {stage_peak(r.memory_stages), stage_alloc_peak(r.memory_stages)};
    mpi_.allreduce_max(peaks, 2);
    in.memory_peak_bytes = peaks[0];
    in.memory_alloc_peak_bytes = peaks[1];
    double sent[2] = {r.comm_bytes_per_step, r.cpu_shared};
    mpi_.allreduce_max(sent, 2);
    in.comm_bytes_per_step = sent[0];
    in.cpu_shared = sent[1];
    RunEnd end;
    end.status = status;
    end.reason = agreement_.reason();
    end.metrics = summarize(in);
    end.extra.set("measured_steps", Value::integer(static_cast<std::int64_t>(measured.size())));
    char heading[160];
    std::snprintf(heading, sizeof(heading),
                  "# summary: %zu measured step(s) after %lld warm-up; a step's time is the "
                  "slowest of %d rank(s)",
                  measured.size(), static_cast<long long>(plan_.settings.train.warmup_steps),
                  mpi_.size());
    end.heading = heading;
    end.rank_path = plan_.rank_path;
    end.out_dir = args_.out;
    end.files = "rank-*.h5, summary.json";
    return finish_run(mpi_, console_, r, end);
  }

  // Hashing every parameter costs about a second per 100M parameters; larger models skip it.
  static constexpr std::int64_t kDigestLimit = 200'000'000;

  const Args& args_;
  MpiEnv& mpi_;
  Console console_;
  TrainPlan plan_;
  DeviceInfo device_;
  std::unique_ptr<TokenSource> data_;
  std::unique_ptr<ResourceSampler> sampler_;
  CpuShareMeter cpu_share_, since_start_;
  std::unique_ptr<Trainer> trainer_;
  RankAgreement agreement_{mpi_, "bench-train"};
  RankResult result_;
  MemoryStages stages_ = model_memory_stages(trainer_, device_, &result_.memory_stages);
  RunStatus pending_ = RunStatus::kOk;
  bool profiling_ = false;                // between start_profile() and write_profile()
  ProfileActivities profile_activities_;  // metrics.profile_activities on this rank's device
  std::string pending_reason_;
};

}  // namespace

int bench_train_main(int argc, char** argv) {
  return bench_program_main(argc, argv, "bench-train", kUsage,
                            [](const Args& args, MpiEnv& mpi) { return Run(args, mpi).execute(); });
}

}  // namespace sweepbench
