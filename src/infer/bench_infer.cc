// bench-infer's orchestration: config, agreement between ranks, warm-up and timed generations,
// results. Torch-free: generation is behind generator.h; the ranks' agreement, identity and end
// are bench-train's (run/bench_run.h).
//
// Every rank is an independent replica generating for its own prompts. Ranks agree after
// building the model and after every run, so a rank that runs out of memory or receives a
// signal stops them all at the same run, and nobody waits on a peer that has gone.
#include "infer/bench_infer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>
#include <optional>

#include "config/config.h"
#include "config/model_shapes.h"
#include "config/settings.h"
#include "infer/generator.h"
#include "metrics/infer_metrics.h"
#include "metrics/statistics.h"
#include "os/fs.h"
#include "os/hardware.h"
#include "results/rank_file.h"
#include "run/bench_run.h"
#include "run/data.h"
#include "run/host_memory.h"
#include "run/point_config.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

const char* const kInferUsage =
    R"(bench-infer: benchmark offline LLM generation on this rank's device; run it under
mpirun -n N, srun --mpi=pmix -n N, or alone for one rank. Every rank is a replica.

Usage: bench-infer --config POINT.yaml --out DIR [--set KEY=VALUE]... [--max-memory-mb N]

Generates infer.output_tokens tokens after infer.input_tokens prompt tokens for infer.batch_size
prompts, infer.warmup_runs times untimed and infer.runs times timed, and measures the time to the
first token, every decode step and the whole generation. Each rank writes DIR/rank-NNNNN.h5
(docs/results-format.md); rank 0 prints a table and writes DIR/summary.json. Existing results are
never overwritten.

Examples:
  bench-infer --config runs/iq/batch_size=1.b7e1c0a2/config.yaml --out /tmp/r
  bench-infer --config point.yaml --set infer.kv_cache=none --out runs/no-cache

Exit codes: 0 ok, 2 bad arguments or config, 3 results already there, 4 cannot write,
20 out of memory, 21 time limit (SIGTERM/SIGUSR1), 22 failed, 23 interrupted (SIGINT/SIGUSR2).

Options:
)";

// Everything decided before any work, identical on all ranks.
struct InferPlan {
  PointConfig point;
  GeneratorOptions gen;
  DataOptions data;
  std::int64_t warmup_runs = 0, runs = 0;
  int sample_interval_ms = 1000;
  bool system_metrics = true, malloc_cache = true;
  std::optional<double> configured_peak_tflops, configured_bandwidth;
  std::string decoding;  // greedy, sample, beam
};

InferPlan make_infer_plan(const Args& args, const MpiEnv& mpi) {
  InferPlan p;
  p.point = read_point_config(args, mpi, "bench-infer", "infer");
  const Settings& set = p.point.settings;
  const InferSettings& n = set.infer;
  GeneratorOptions& g = p.gen;
  g.shape = model_shape_of(p.point.config);
  g.preset = set.model_preset;
  g.batch = n.batch_size;
  g.input_tokens = n.input_tokens;
  g.output_tokens = n.output_tokens;
  g.num_beams = n.num_beams;
  g.do_sample = n.do_sample;
  g.temperature = n.temperature;
  g.top_k = n.top_k;
  g.top_p = n.top_p;
  g.seed = n.seed;
  g.kv_cache = n.kv_cache;
  g.dtype = n.dtype;
  g.token_metrics = n.token_metrics;
  g.cuda_graph = n.cuda_graph;
  g.device = set.launch.device;
  g.local_rank = mpi.local_rank();
  g.threads = compute_threads(set, mpi);
  g.cpu_memory_budget = args.max_memory_mb * 1024 * 1024;
  p.warmup_runs = n.warmup_runs;
  p.runs = n.runs;
  p.sample_interval_ms = static_cast<int>(set.metrics.sample_interval_ms);
  p.system_metrics = set.metrics.system;
  p.malloc_cache = set.launch.malloc_cache;
  p.configured_peak_tflops = set.hardware.peak_tflops;
  p.configured_bandwidth = set.hardware.peak_bandwidth_gbs;
  p.decoding = n.num_beams > 1 ? "beam" : (n.do_sample ? "sample" : "greedy");

  // Prompts: batch_size sequences of input_tokens ids, drawn once per rank (PACE's data
  // generator: the same prompts for every run).
  DataOptions& d = p.data;
  d = data_options(set.data);
  d.seq_len = n.input_tokens;
  d.vocab_size = g.shape.vocab_size;
  d.seed = n.seed;
  d.train_batch = n.batch_size;
  d.needs_eval = false;
  return p;
}

int element_bytes(DType d) { return d == DType::kFp32 ? 4 : 2; }

class InferRun {
 public:
  InferRun(const Args& args, MpiEnv& mpi) : args_(args), mpi_(mpi), console_(mpi.rank() == 0) {}

  int execute() {
    since_start_.start();  // what other processes use of the CPUs, until the threads are chosen
    // 1. Everything that can be wrong with the inputs, before any work; nothing is written yet.
    {
      int local = 0;
      std::string message;
      try {
        plan_ = make_infer_plan(args_, mpi_);
        device_ = select_device(device_options(plan_.gen));
        data_ = open_token_source(plan_.data, mpi_.rank(), mpi_.size());
      } catch (const Error& e) {
        local = sweepbench::exit_code_for(e.kind());
        message = error_line(e, "bench-infer");
      }
      if (int code = agreement_.on_start(local, message)) return code;
      try {
        make_directories(args_.out);
        check_writable_directory(args_.out);
      } catch (const Error& e) {
        local = sweepbench::exit_code_for(e.kind());
        message = error_line(e, "bench-infer");
      }
      if (int code = agreement_.on_start(local, message)) return code;
    }
    // Fewer threads where other processes already use the CPUs (run/bench_run.h).
    choose_threads_beside_neighbours(since_start_, mpi_,
                                     plan_.point.settings.launch.cpus_per_rank.has_value(),
                                     device_, result_, "bench-infer");
    plan_.gen.threads = device_.threads;
    fill();
    banner();
    sampler_ = std::make_unique<ResourceSampler>(plan_.sample_interval_ms, device_.pci_bus_id,
                                                 plan_.system_metrics);
    sampler_->start();
    bandwidth();  // before the model: its buffers are gone before anything is budgeted
    RunStatus status = build();
    if (status == RunStatus::kOk) status = generate();
    sampler_->stop();
    return finish(status);
  }

 private:
  RunStatus build() {
    stages_.before_init();
    stages_.begin("init");
    RunStatus local = RunStatus::kOk;
    std::string reason;
    if (plan_.malloc_cache) keep_freed_host_memory();
    try {
      generator_ = make_generator(plan_.gen);
    } catch (const ModelInitError& e) {
      local = from_outcome(e.outcome());
      reason = std::string("building the model: ") + e.what();
    }
    RunStatus agreed = agreement_.agree(local, reason);
    if (generator_) {
      result_.memory_stage_source = generator_->memory_source();
      result_.parameter_count = generator_->parameter_count();
    }
    stages_.end();
    return agreed;
  }

  // The peak bandwidth MBU is measured against: the config's, the table's (GPUs), or one
  // measured here at the start (CPUs), every rank at once as they will run.
  void bandwidth() {
    InferResult& n = result_.infer;
    DevicePeak peak = resolve_peak(plan_.configured_bandwidth, device_.type == "cuda",
                                   peak_bandwidth_gbs_for(device_.name));
    n.peak_bandwidth_gbs = peak.value;
    n.peak_bandwidth_source = peak.source;
    if (peak.source == "none" && device_.type == "cpu") {
      n.peak_bandwidth_gbs = measure_copy_bandwidth_gbs(device_.threads);
      if (n.peak_bandwidth_gbs > 0) n.peak_bandwidth_source = "measured";
    }
  }

  RunStatus generate() {
    InferResult& n = result_.infer;
    stages_.begin("generate");
    RunStatus status = RunStatus::kOk;
    Batch prompts;
    PhaseStatus loaded;
    try {
      prompts = data_->next_train(plan_.gen.batch);
    } catch (const std::bad_alloc&) {
      loaded = {Outcome::kOom, "loading the prompts: std::bad_alloc: the host is out of memory"};
    }
    status = agreement_.agree(from_outcome(loaded.outcome), loaded.reason);
    const std::int64_t total = plan_.warmup_runs + plan_.runs;
    // With metrics.target_ci the timed runs go on past infer.runs until the mean generation
    // time is precise enough (metrics/statistics.h) or metrics.max_seconds of them are spent.
    size_t look = 0;
    for (std::int64_t run = 0; status == RunStatus::kOk; ++run) {
      if (run >= total && !keep_measuring(&look)) break;
      if (run == plan_.warmup_runs) cpu_share_.start();
      Generation g = generator_->generate(prompts.inputs);
      RunStatus local =
          g.status.outcome != Outcome::kOk ? from_outcome(g.status.outcome) : signal_status();
      status = agreement_.agree(local, g.status.outcome != Outcome::kOk
                                           ? "generation: " + g.status.reason
                                           : "received " + signal_text());
      if (status >= RunStatus::kOom) break;  // the run did not finish on some rank
      const bool warmup = run < plan_.warmup_runs;
      n.runs.push_back({run, warmup, g.ttft_s, g.e2e_s, plan_.gen.output_tokens});
      n.cuda_graph = g.cuda_graph;  // the same for every run of a generator
      if (plan_.gen.token_metrics) {
        n.token_times.push_back({run, 0, g.ttft_s});
        for (size_t s = 0; s < g.step_s.size(); ++s) {
          n.token_times.push_back({run, static_cast<std::int64_t>(s) + 1, g.step_s[s]});
        }
      }
      n.generated_ids.insert(n.generated_ids.end(), g.tokens.begin(), g.tokens.end());
      progress(run, std::max(total, run + 1), warmup, g);
      if (status != RunStatus::kOk) break;  // a signal: this run finished, stop here
    }
    cpu_share_.finish(mpi_, result_);  // every rank: it reduces over the node
    stages_.end();
    return status;
  }

  void fill() {
    RankResult& r = result_;
    fill_identity(r, mpi_, device_, "infer");
    r.config_yaml = plan_.point.config_yaml;
    r.config_hash = plan_.point.config_hash;
    r.tag = plan_.point.tag;
    const GeneratorOptions& g = plan_.gen;
    r.parameter_count = parameter_count(g.shape);
    r.seq_len = g.input_tokens + g.output_tokens;
    r.micro_batch = g.batch;
    const std::string dtype = to_string(g.dtype);
    DevicePeak peak = resolve_peak(plan_.configured_peak_tflops, device_.type == "cuda",
                                   peak_tflops_for(device_.name, dtype));
    r.peak_tflops = peak.value;
    r.peak_tflops_source = peak.source;
    InferResult& n = r.infer;
    n.batch_size = g.batch;
    n.input_tokens = g.input_tokens;
    n.output_tokens = g.output_tokens;
    n.num_beams = g.num_beams;
    n.warmup_runs = plan_.warmup_runs;
    n.runs_planned = plan_.runs;
    n.kv_cache = to_string(g.kv_cache);
    n.dtype = dtype;
    n.decoding = plan_.decoding;
    n.token_metrics = g.token_metrics;
    InferenceCost cost = inference_cost(g.shape, g.batch * g.num_beams, g.input_tokens,
                                        g.output_tokens, element_bytes(g.dtype));
    n.prefill_flops = cost.prefill_flops;
    n.decode_flops = cost.decode_flops;
    n.decode_bytes = cost.decode_bytes;
    n.weight_bytes = cost.weight_bytes;
    // The cache for input + output tokens (a dynamic one ends one position short); none: 0.
    n.kv_cache_bytes = g.kv_cache == KvCache::kNone ? 0 : cost.kv_cache_bytes;
  }

  void banner() {
    if (!console_.enabled()) return;
    const GeneratorOptions& g = plan_.gen;
    console_.line(
        "# bench-infer %s: %s (%s, %.2fM parameters), %d rank(s), %s (%s), %s, %d thread(s)/rank",
        SWEEPBENCH_VERSION, g.preset.c_str(), g.shape.arch.c_str(),
        static_cast<double>(parameter_count(g.shape)) / 1e6, mpi_.size(), device_.type.c_str(),
        device_.name.c_str(), to_string(g.dtype).c_str(), device_.threads);
    console_.line(
        "# per rank and run: batch %lld x (%lld in + %lld out) tokens, %s decoding%s, kv cache "
        "%s; %lld warm-up + %lld timed runs",
        static_cast<long long>(g.batch), static_cast<long long>(g.input_tokens),
        static_cast<long long>(g.output_tokens), plan_.decoding.c_str(),
        g.num_beams > 1 ? (" (" + std::to_string(g.num_beams) + " beams)").c_str() : "",
        to_string(g.kv_cache).c_str(), static_cast<long long>(plan_.warmup_runs),
        static_cast<long long>(plan_.runs));
    console_.line("# prompts: %s", data_->describe().c_str());
    console_.line("#  %9s  %6s  %11s  %11s  %9s  %12s", "run", "kind", "ttft_ms", "tpot_ms",
                  "e2e_s", "output_tok/s");
    console_.line("#  %9s  %6s  %11s  %11s  %9s  %12s", "", "", "ms", "ms", "s", "tokens/s");
  }

  // Whether to run again past infer.runs (metrics.target_ci): at the first look and then each
  // time the timed runs have grown by half, every rank's interval of its mean generation time
  // within the target stops all; so does, after any run, the slowest rank's timed runs past
  // metrics.max_seconds (a generation is long: the ranks agree on it after every one).
  bool keep_measuring(size_t* look) {
    const std::optional<double> target = plan_.point.settings.metrics.target_ci;
    if (!target) return false;
    std::vector<double> timed;  // the timed runs' generation times, as the summary takes them
    for (const InferRunRecord& run : result_.infer.runs) {
      if (!run.warmup) timed.push_back(run.e2e_s);
    }
    const double timed_s = std::accumulate(timed.begin(), timed.end(), 0.0);
    const bool at_look = timed.size() >= *look;  // the same on every rank: they run alike
    const bool precise = at_look && precise_enough_runs(timed, *target);
    double state[2] = {precise ? 0.0 : 1.0, timed_s};
    mpi_.allreduce_max(state, 2);
    if (state[0] == 0 || state[1] >= plan_.point.settings.metrics.max_seconds) return false;
    if (at_look) *look = next_look_runs(timed.size());
    return true;
  }

  void progress(std::int64_t run, std::int64_t total, bool warmup, const Generation& g) {
    if (!console_.enabled()) return;
    const GeneratorOptions& o = plan_.gen;
    double tpot =
        time_per_output_token({g.ttft_s, g.e2e_s, {}}, static_cast<double>(o.output_tokens));
    char run_text[48];
    std::snprintf(run_text, sizeof(run_text), "%lld/%lld", static_cast<long long>(run + 1),
                  static_cast<long long>(total));
    double tps = static_cast<double>(o.batch * o.output_tokens) / g.e2e_s;
    console_.line("   %9s  %6s  %11.3f  %11.3f  %9.3f  %12s", run_text, warmup ? "warmup" : "timed",
                  g.ttft_s * 1e3, std::isnan(tpot) ? 0.0 : tpot * 1e3, g.e2e_s,
                  with_commas(tps).c_str());
  }

  int finish(RunStatus status) {
    RankResult& r = result_;
    r.end_time = utc_now_iso8601();
    r.status = status_name(status);
    r.reason = agreement_.reason();
    r.rank_status = agreement_.rank_status();
    take_samples(*sampler_, r);

    // The slowest rank's time of every timed run and decode step. Every rank ran the same runs
    // (they agree after each), and token metrics are on or off for all.
    std::vector<InferRunTiming> runs = timed_runs(r.infer);
    std::vector<double> flat;
    for (const InferRunTiming& t : runs) {
      flat.push_back(t.ttft_s);
      flat.push_back(t.e2e_s);
      flat.insert(flat.end(), t.step_s.begin(), t.step_s.end());
    }
    mpi_.allreduce_max(flat.data(), flat.size());
    size_t at = 0;
    for (InferRunTiming& t : runs) {
      t.ttft_s = flat[at++];
      t.e2e_s = flat[at++];
      for (double& s : t.step_s) s = flat[at++];
    }
    InferSummaryInput in = infer_summary_shapes(r);
    in.runs = runs;
    in.world_size = mpi_.size();
    // Each rank measured its own bandwidth; the summary uses rank 0's, as bench-extract does.
    mpi_.broadcast(&in.peak_bandwidth_gbs, sizeof(in.peak_bandwidth_gbs), 0);
    double peaks[3] = {stage_peak(r.memory_stages), stage_alloc_peak(r.memory_stages),
                       r.cpu_shared};
    mpi_.allreduce_max(peaks, 3);
    in.memory_peak_bytes = peaks[0];
    in.memory_alloc_peak_bytes = peaks[1];
    in.cpu_shared = peaks[2];

    RunEnd end;
    end.status = status;
    end.reason = agreement_.reason();
    end.metrics = summarize_infer(in);
    end.extra.set("measured_runs", Value::integer(static_cast<std::int64_t>(runs.size())));
    // Which decode path ran (the rank file's infer/cuda_graph): a calibration reads it here.
    end.extra.set("cuda_graph", Value::boolean(r.infer.cuda_graph));
    char heading[200];
    std::snprintf(heading, sizeof(heading),
                  "# summary: %zu timed run(s) after %lld warm-up; a run's times are the slowest "
                  "of %d rank(s)",
                  runs.size(), static_cast<long long>(plan_.warmup_runs), mpi_.size());
    end.heading = heading;
    end.rank_path = plan_.point.rank_path;
    end.out_dir = args_.out;
    end.files = "rank-*.h5, summary.json";
    return finish_run(mpi_, console_, r, end);
  }

  const Args& args_;
  MpiEnv& mpi_;
  Console console_;
  InferPlan plan_;
  DeviceInfo device_;
  std::unique_ptr<TokenSource> data_;
  std::unique_ptr<ResourceSampler> sampler_;
  CpuShareMeter cpu_share_, since_start_;
  std::unique_ptr<Generator> generator_;
  RankAgreement agreement_{mpi_, "bench-infer"};
  RankResult result_;
  MemoryStages stages_ = model_memory_stages(generator_, device_, &result_.memory_stages);
};

}  // namespace

int bench_infer_main(int argc, char** argv) {
  return bench_program_main(
      argc, argv, "bench-infer", kInferUsage,
      [](const Args& args, MpiEnv& mpi) { return InferRun(args, mpi).execute(); });
}

}  // namespace sweepbench
