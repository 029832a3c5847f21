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

#include "core/config.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/hardware.h"
#include "core/model_shapes.h"
#include "core/settings.h"
#include "core/text.h"
#include "core/yaml_io.h"
#include "results/rank_file.h"
#include "results/summary.h"
#include "train/clean_env.h"
#include "train/console.h"
#include "train/data.h"
#include "train/host_memory.h"
#include "train/mpi_env.h"
#include "train/run_info.h"
#include "train/run_status.h"
#include "train/sampler.h"
#include "train/train_args.h"
#include "train/train_plan.h"
#include "train/trainer.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

class Run {
 public:
  Run(const Args& args, MpiEnv& mpi) : args_(args), mpi_(mpi), console_(mpi.rank() == 0) {}

  int execute() {
    // 1. Everything that can be wrong with the inputs, before any work; nothing is written yet.
    {
      int local = 0;
      std::string message;
      try {
        plan_ = make_plan(args_, mpi_);
        device_ = select_device(plan_.trainer);
        data_ = open_token_source(plan_.data, mpi_.rank(), mpi_.size());
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
    fill_identity();
    banner();

    sampler_ = std::make_unique<ResourceSampler>(plan_.sample_interval_ms, device_.pci_bus_id,
                                                 plan_.system_metrics);
    sampler_->start();  // the baseline sample

    RunStatus status = build();
    if (status == RunStatus::kOk) status = train();
    if (status == RunStatus::kOk && plan_.eval_steps > 0) status = evaluate();
    sampler_->stop();
    return finish(status);
  }

 private:
  // Before the run: the largest exit code wins, and the rank that has it says why.
  int agree_on_start(int local, const std::string& message) {
    Collectives::Max agreed = mpi_.allreduce_max(local);
    if (agreed.value != 0 && mpi_.rank() == agreed.rank)
      std::fprintf(stderr, "%s\n", message.c_str());
    return agreed.value;
  }

  // Agrees on the most severe status over all ranks; keeps the first reason seen.
  RunStatus agree(RunStatus local, const std::string& reason) {
    Collectives::Max m = mpi_.allreduce_max(static_cast<int>(local));
    RunStatus agreed = static_cast<RunStatus>(m.value);
    if (agreed != RunStatus::kOk && reason_.empty()) {
      // The deciding rank's reason travels as text: broadcast its length, then its bytes.
      std::string text = local == agreed ? reason : "";
      std::int64_t length = static_cast<std::int64_t>(text.size());
      mpi_.broadcast(&length, sizeof(length), m.rank);
      text.resize(static_cast<size_t>(length));
      mpi_.broadcast(text.data(), text.size(), m.rank);
      reason_ = (mpi_.size() > 1 ? "rank " + std::to_string(m.rank) + ": " : std::string()) + text;
      rank_status_ = local == RunStatus::kOk ? "ok" : status_name(local);
    }
    return agreed;
  }

  MemoryReading memory() {
    if (trainer_) return trainer_->memory();
    if (device_.type == "cpu") return {current_rss_bytes(), peak_rss_bytes()};
    return {0, 0};  // nothing of ours is on the GPU before the model
  }

  void reset_peak() {
    if (trainer_) {
      trainer_->reset_peak_memory();
    } else if (device_.type == "cpu") {
      reset_peak_rss();
    }
  }

  void stage_begin(const std::string& name) {
    reset_peak();
    stage_ = StageMemory{name, memory().current, 0, 0};
  }

  void stage_end() {
    MemoryReading m = memory();
    stage_.end = m.current;
    stage_.peak = std::max(m.peak, stage_.end);
    result_.memory_stages.push_back(stage_);
  }

  RunStatus build() {
    MemoryReading before = memory();
    result_.memory_stages.push_back(
        StageMemory{"before_init", before.current, before.current, before.current});
    stage_begin("init");
    RunStatus local = RunStatus::kOk;
    std::string reason;
    // Before the model allocates anything, so its blocks come from the reusable heap.
    if (plan_.malloc_cache) keep_freed_host_memory();
    try {
      trainer_ = make_trainer(plan_.trainer, mpi_);
    } catch (const TrainerInitError& e) {
      local = from_outcome(e.outcome());
      reason = std::string("building the model: ") + e.what();
    }
    RunStatus agreed = agree(local, reason);
    if (trainer_) {
      result_.memory_stage_source = trainer_->memory_source();
      result_.parameter_count = trainer_->parameter_count();
      result_.threads = trainer_->device().threads;
    }
    stage_end();
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
        plan_.micro_batch * plan_.trainer.seq_len * plan_.grad_accum;
    const std::int64_t global_tokens = tokens_per_step * mpi_.size();
    stage_begin("train");
    RunStatus status = RunStatus::kOk;
    double started = now_s();
    double measured_time = 0;
    std::int64_t measured_steps = 0;
    for (std::int64_t step = 0; step < plan_.steps; ++step) {
      double t0 = now_s();
      std::vector<Batch> batches;
      PhaseStatus fb = load_batches([&] {
        for (std::int64_t i = 0; i < plan_.grad_accum; ++i)
          batches.push_back(data_->next_train(plan_.micro_batch));
      });
      double data_s = now_s() - t0;

      if (fb.outcome == Outcome::kOk) fb = trainer_->forward_backward(batches);
      RunStatus local = fb.outcome != Outcome::kOk ? from_outcome(fb.outcome) : signal_status();
      status = agree(local, fb.outcome != Outcome::kOk ? fb.reason : "received " + signal_text());
      if (status >= RunStatus::kOom) break;  // no update: the step is lost on every rank

      PhaseStatus up = trainer_->update(plan_.lr);
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
      r.samples = plan_.micro_batch * plan_.grad_accum;
      r.loss = timing.loss;
      r.lr = plan_.lr;
      r.grad_norm = timing.grad_norm;
      r.loss_scale = timing.loss_scale;
      r.skipped = timing.skipped;
      r.measured = step >= plan_.warmup;
      result_.steps.push_back(r);
      if (r.measured) {
        measured_time += r.total_s;
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
    stage_end();
    return status;
  }

  RunStatus evaluate() {
    stage_begin("eval");
    RunStatus status = RunStatus::kOk;
    double t0 = now_s();
    double loss_sum = 0;
    EvalSummary& e = result_.eval;
    for (std::int64_t i = 0; i < plan_.eval_steps; ++i) {
      double b0 = now_s();
      Batch batch;
      EvalOutput out;
      out.status = load_batches([&] { batch = data_->next_eval(plan_.eval_batch); });
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
    stage_end();
    return status;
  }

  // 128 random bits from rank 0, the same on every rank: bench-extract accepts rank files as one
  // run only when they share it.
  std::string draw_run_id() {
    char id[33] = {};
    if (mpi_.rank() == 0) {
      std::random_device entropy;  // /dev/urandom
      for (int i = 0; i < 4; ++i) std::snprintf(id + 8 * i, 9, "%08x", entropy());
    }
    mpi_.broadcast(id, 32, 0);
    return std::string(id, 32);
  }

  void fill_identity() {
    RankResult& r = result_;
    r.config_yaml = plan_.config_yaml;
    r.config_hash = plan_.config_hash;
    r.tag = plan_.tag;
    r.run_id = draw_run_id();
    r.rank = mpi_.rank();
    r.world_size = mpi_.size();
    r.local_rank = mpi_.local_rank();
    r.hostname = mpi_.hostname();
    r.device_type = device_.type;
    r.device_name = device_.name;
    r.device_count = device_.count;
    r.sweepbench_version = SWEEPBENCH_VERSION;
    r.torch_version = device_.torch_version;
    r.cuda_version = device_.cuda_version;
    r.nccl_version = device_.nccl_version;
    r.mpi_version = mpi_.library_version();
    r.threads = device_.threads;
    RunEnvironment env = detect_environment();
    r.container_runtime = env.container_runtime;
    r.container_image = env.container_image;
    r.container_digest = env.container_digest;
    r.container_env_kept = env.container_env_kept;
    r.slurm_job_id = env.slurm_job_id;
    r.slurm_array_job_id = env.slurm_array_job_id;
    r.slurm_array_task_id = env.slurm_array_task_id;
    r.slurm_step_id = env.slurm_step_id;
    r.start_time = utc_now_iso8601();
    const ModelShape& s = plan_.trainer.shape;
    r.parameter_count = parameter_count(s);
    r.flops_per_token = training_flops_per_token(s, plan_.trainer.seq_len);
    r.flops_per_token_6n = training_flops_per_token_6n(s);
    if (plan_.configured_peak) {
      r.peak_tflops = *plan_.configured_peak;
      r.peak_tflops_source = "config";
    } else if (device_.type == "cuda") {
      std::optional<double> table = peak_tflops_for(device_.name, plan_.dtype);
      r.peak_tflops = table.value_or(0.0);
      r.peak_tflops_source = table ? "table" : "none";
    } else {
      r.peak_tflops_source = "none";
    }
    r.steps_planned = plan_.steps;
    r.warmup_steps = plan_.warmup;
    r.seq_len = plan_.trainer.seq_len;
    r.micro_batch = plan_.micro_batch;
    r.grad_accum = plan_.grad_accum;
  }

  void banner() {
    if (!console_.enabled()) return;
    const ModelShape& s = plan_.trainer.shape;
    console_.line(
        "# bench-train %s: %s (%s, %.2fM parameters), %d rank(s), %s (%s), %s, %d thread(s)/rank",
        SWEEPBENCH_VERSION, plan_.preset.c_str(), s.arch.c_str(),
        static_cast<double>(parameter_count(s)) / 1e6, mpi_.size(), device_.type.c_str(),
        device_.name.c_str(), plan_.dtype.c_str(), device_.threads);
    console_.line(
        "# per rank and step: micro batch %lld x seq %lld x accum %lld = %s tokens; %lld steps, "
        "the first %lld warm-up; eval %lld batches",
        static_cast<long long>(plan_.micro_batch), static_cast<long long>(plan_.trainer.seq_len),
        static_cast<long long>(plan_.grad_accum),
        with_commas(
            static_cast<double>(plan_.micro_batch * plan_.trainer.seq_len * plan_.grad_accum))
            .c_str(),
        static_cast<long long>(plan_.steps), static_cast<long long>(plan_.warmup),
        static_cast<long long>(plan_.eval_steps));
    console_.line("# data: %s", data_->describe().c_str());
    console_.line("#  %11s  %9s  %12s  %7s  %8s", "step", "loss", "tokens/s", "mfu", "eta");
  }

  void progress(std::int64_t step, const StepRecord& r, std::int64_t global_tokens, double started,
                double measured_time, std::int64_t measured_steps) {
    bool last = step + 1 == plan_.steps;
    if (!console_.enabled() || (!last && (step + 1) % plan_.log_every != 0)) return;
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
    double eta = per_step * static_cast<double>(plan_.steps - step - 1);
    char step_text[32];
    std::snprintf(step_text, sizeof(step_text), "%lld/%lld", static_cast<long long>(step + 1),
                  static_cast<long long>(plan_.steps));
    console_.line("   %11s  %9.4f  %12s  %7s  %8s", step_text, r.loss, with_commas(tps).c_str(),
                  mfu.c_str(), duration_text(eta).c_str());
  }

  int finish(RunStatus status) {
    RankResult& r = result_;
    r.end_time = utc_now_iso8601();
    r.status = status_name(status);
    r.reason = reason_;
    r.rank_status = rank_status_;
    if (trainer_ && r.parameter_count <= kDigestLimit)
      r.parameter_sha256 = trainer_->parameter_sha256();
    std::vector<ResourceSample> samples = sampler_->samples();
    r.samples.device_source = sampler_->device_source();
    for (const ResourceSample& s : samples) {
      r.samples.time_s.push_back(s.time_s);
      r.samples.device_bytes.push_back(s.device_bytes);
      r.samples.rss_bytes.push_back(s.rss_bytes);
      r.samples.cpu_percent.push_back(s.cpu_percent);
      r.samples.ram_used_mb.push_back(s.ram_used_mb);
    }

    // The summary: step times are the slowest rank's. Every rank recorded the same steps.
    std::vector<StepRecord> measured;
    for (const StepRecord& s : r.steps) {
      if (s.measured) measured.push_back(s);
    }
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
    in.tokens_per_step = static_cast<double>(plan_.micro_batch * plan_.trainer.seq_len *
                                             plan_.grad_accum * mpi_.size());
    in.samples_per_step = static_cast<double>(plan_.micro_batch * plan_.grad_accum * mpi_.size());
    in.world_size = mpi_.size();
    in.flops_per_token = r.flops_per_token;
    in.peak_tflops = r.peak_tflops;
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
    double peak = -1;  // the allocator's (or the RSS's) peak over all stages and ranks
    for (const StageMemory& m : r.memory_stages) peak = std::max(peak, static_cast<double>(m.peak));
    mpi_.allreduce_max(&peak, 1);
    in.memory_peak_bytes = peak;
    std::vector<Metric> metrics = summarize(in);

    // Each rank writes its own file; the run's outcome stands only if every rank's did, so the
    // ranks agree before rank 0 writes the summary or says OK.
    int code = exit_code_for(status);
    int local = 0;
    std::string failure;
    auto fail = [&](const Error& e) {
      std::fprintf(stderr, "%s: error: %s\n", e.mark().str().c_str(), e.detail().c_str());
      local = sweepbench::exit_code_for(e.kind());
      failure = e.detail();
    };
    try {
      write_rank_file(r, plan_.rank_path);
    } catch (const Error& e) {
      fail(e);
    }
    Collectives::Max written = mpi_.allreduce_max(local);
    if (written.value == 0 && mpi_.rank() == 0) {
      try {
        write_summary_json(status, metrics, measured.size());
      } catch (const Error& e) {
        fail(e);
        written = {local, 0};
      }
    }
    if (written.value != 0) {
      code = written.value;
      failure = "rank " + std::to_string(written.rank) + " could not write its results" +
                (written.rank == mpi_.rank() ? ": " + failure : " (its error is above)");
    }
    print_summary(status, metrics, measured.size(), failure);
    return code;
  }

  void write_summary_json(RunStatus status, const std::vector<Metric>& metrics, size_t measured) {
    Value root = Value::map();
    root.set("status", Value::string(status_name(status)));
    root.set("reason", Value::string(reason_));
    root.set("tag", Value::string(plan_.tag));
    root.set("config_hash", Value::string(plan_.config_hash));
    root.set("run_id", Value::string(result_.run_id));
    root.set("world_size", Value::integer(mpi_.size()));
    root.set("measured_steps", Value::integer(static_cast<std::int64_t>(measured)));
    Value values = Value::map();
    Value units = Value::map();
    for (const Metric& m : metrics) {
      values.set(m.name, std::isfinite(m.value) ? Value::real(m.value) : Value::null());
      units.set(m.name, Value::string(m.unit));
    }
    root.set("metrics", values);
    root.set("units", units);
    write_file_atomic((fs::path(args_.out) / "summary.json").string(), emit_json(root, 2) + "\n");
  }

  // `write_failure`: why the results are not all written; then nothing is claimed.
  void print_summary(RunStatus status, const std::vector<Metric>& metrics, size_t measured,
                     const std::string& write_failure) {
    if (!console_.enabled()) return;
    console_.line(
        "# summary: %zu measured step(s) after %lld warm-up; a step's time is the slowest of %d "
        "rank(s)",
        measured, static_cast<long long>(plan_.warmup), mpi_.size());
    console_.line("#  %-32s %16s  %s", "metric", "value", "unit");
    for (const Metric& m : metrics) {
      console_.line("   %-32s %16.6g  %s", m.name.c_str(), m.value, m.unit.c_str());
    }
    if (!write_failure.empty()) {
      console_.line("# FAILED: %s; the results in %s are not complete", write_failure.c_str(),
                    args_.out.c_str());
    } else if (status == RunStatus::kOk) {
      console_.line("# OK: results in %s (rank-*.h5, summary.json)", args_.out.c_str());
    } else {
      console_.line("# FAILED: %s: %s; results in %s", status_name(status), reason_.c_str(),
                    args_.out.c_str());
    }
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
  std::unique_ptr<Trainer> trainer_;
  RankResult result_;
  StageMemory stage_;
  std::string reason_;
  std::string rank_status_ = "ok";
  RunStatus pending_ = RunStatus::kOk;
  std::string pending_reason_;
};

}  // namespace

int bench_train_main(int argc, char** argv) {
  install_signal_handlers();
  reexec_with_kept_environment(
      argc, argv, g_signal.load());  // --env-keep: before anything reads the environment
  po::options_description desc;
  Args args;
  try {
    args = parse_args(argc, argv, desc);
  } catch (const po::error& e) {
    if (launcher_rank() == 0) {
      std::fprintf(stderr, "bench-train: error: %s (bench-train --help lists the options)\n",
                   e.what());
    }
    return kExitUsage;
  } catch (const Error& e) {
    if (launcher_rank() == 0) {
      std::fprintf(stderr, "%s: error: %s\n", e.mark().str().c_str(), e.detail().c_str());
    }
    return kExitUsage;
  }
  if (args.help || args.version) {
    if (launcher_rank() == 0) {
      if (args.version) {
        std::printf("bench-train %s\n", SWEEPBENCH_VERSION);
      } else {
        std::ostringstream text;
        text << desc;
        std::printf("%s%s", kUsage, text.str().c_str());
      }
    }
    return kExitOk;
  }
  try {
    MpiEnv mpi(&argc, &argv);
    try {
      return Run(args, mpi).execute();
    } catch (const std::exception& e) {
      // A bug or an MPI failure mid-run: the peers may be waiting in a collective, so end the job.
      std::fprintf(stderr, "bench-train: rank %d: internal error: %s\n", mpi.rank(), e.what());
      mpi.abort(kExitInternal);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench-train: cannot start MPI: %s\n", e.what());
    return kExitInternal;
  }
}

}  // namespace sweepbench
