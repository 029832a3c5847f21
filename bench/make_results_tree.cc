// make_results_tree: fills a planned sweep directory with the results a run would leave, for
// bench/extract_speed (bench-extract's speed on a big tree).
//
//   bench-sweep plan SWEEP --out DIR
//   make_results_tree --out DIR --ranks 8 --steps 1000 [--jobs 2]
//
// Every point of DIR/manifest.json gets rank-NNNNN.h5 files written by bench-train's own writer
// (write_rank_file) and a status.json written by the runner's (write_point_record), so the tree
// is what bench-extract meets after a real sweep: the same layout, attributes, datasets and
// sizes. The numbers are made up but plausible (step times around 0.1 s with noise, a loss that
// falls, one sample a second), deterministic from the point and rank. Points that already have a
// status.json are left alone, so an interrupted generation goes on where it stopped.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "config/yaml_io.h"
#include "layout/point_record.h"
#include "metrics/summary.h"
#include "os/fs.h"
#include "results/rank_file.h"
#include "text/error.h"
#include "text/text.h"

namespace sb = sweepbench;
namespace fs = std::filesystem;

namespace {

struct Options {
  std::string out;
  std::int64_t ranks = 8, steps = 1000, warmup = 10, jobs = 2;
};

sb::RankResult make_rank(const std::string& config_yaml, const std::string& hash,
                         const std::string& tag, std::int64_t index, std::int64_t rank,
                         const Options& o) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(index) * 1000003u +
                      static_cast<std::uint64_t>(rank));
  std::normal_distribution<double> noise(0.0, 1.0);
  sb::RankResult r;
  r.config_yaml = config_yaml;
  r.config_hash = hash;
  r.tag = tag;
  r.run_id = "run" + std::to_string(index);
  r.rank = rank;
  r.world_size = o.ranks;
  r.local_rank = rank % 8;
  r.hostname = "node-" + std::to_string(rank / 8);
  r.device_type = "cuda";
  r.device_name = "NVIDIA H100 80GB HBM3";
  r.device_count = 8;
  r.sweepbench_version = "0.1.0";
  r.torch_version = "2.11.0";
  r.cuda_version = "13.0";
  r.nccl_version = "2.27.7";
  r.mpi_version = "Open MPI v4.1.4";
  r.threads = 4;
  r.slurm_job_id = "4242";
  r.start_time = "2026-11-22T10:00:00Z";
  r.end_time = "2026-11-22T10:02:00Z";
  r.status = "ok";
  r.parameter_count = 124439808;
  r.flops_per_token = 6.0 * 124439808 + 12.0 * 12 * 768 * 1024;
  r.flops_per_token_6n = 6.0 * 124439808;
  r.peak_tflops = 989;
  r.peak_tflops_source = "table";
  r.steps_planned = o.steps;
  r.warmup_steps = o.warmup;
  r.seq_len = 1024;
  r.micro_batch = 8;
  r.grad_accum = 1;
  r.parameter_sha256 = std::string(64, 'a');
  double base = 0.1 * (1.0 + 0.01 * static_cast<double>(index % 50));
  for (std::int64_t s = 0; s < o.steps; ++s) {
    sb::StepRecord st;
    st.step = s;
    st.forward_s = base * 0.3 * (1 + 0.02 * noise(rng));
    st.backward_s = base * 0.6 * (1 + 0.02 * noise(rng));
    st.comm_s = base * 0.05 * (1 + 0.1 * std::abs(noise(rng)));
    st.optimizer_s = base * 0.04;
    st.data_s = 1e-4;
    st.total_s = st.data_s + st.forward_s + st.backward_s + st.comm_s + st.optimizer_s +
                 (s < o.warmup ? 2 * base : 0);
    st.tokens = r.seq_len * r.micro_batch;
    st.samples = r.micro_batch;
    st.loss = 10.0 * std::exp(-static_cast<double>(s) / 400.0) + 3.0 + 0.05 * noise(rng);
    st.lr = 6e-4;
    st.grad_norm = 1.0 + 0.1 * noise(rng);
    st.measured = s >= o.warmup;
    r.steps.push_back(st);
  }
  r.eval.ran = true;
  r.eval.steps = 10;
  r.eval.samples = 80;
  r.eval.tokens = 80 * 1024;
  r.eval.loss = 3.2;
  r.eval.seconds = 0.4;
  for (int b = 0; b < 10; ++b) {
    r.eval.batch_loss.push_back(3.2 + 0.01 * noise(rng));
    r.eval.batch_s.push_back(0.04);
  }
  r.memory_stage_source = "cuda_device";
  const std::int64_t gib = std::int64_t{1} << 30;
  r.memory_stages = {{"before_init", 0, 0, 0},
                     {"init", 0, 2 * gib, 2 * gib},
                     {"train", 2 * gib, 3 * gib, 30 * gib},
                     {"eval", 3 * gib, 3 * gib, 8 * gib}};
  r.samples.device_source = "nvml";
  std::int64_t seconds = static_cast<std::int64_t>(base * static_cast<double>(o.steps)) + 1;
  for (std::int64_t t = 0; t <= seconds; ++t) {
    r.samples.time_s.push_back(static_cast<double>(t));
    r.samples.device_bytes.push_back(t == 0 ? gib / 2 : 34 * gib);
    r.samples.rss_bytes.push_back(3 * gib);
    r.samples.cpu_percent.push_back(100 + 5 * noise(rng));
    r.samples.ram_used_mb.push_back(20000);
  }
  return r;
}

void fill_point(const fs::path& dir, const std::string& hash, std::int64_t index,
                const Options& o) {
  if (fs::exists(dir / "status.json")) return;
  std::string config_yaml = sb::read_file_if_exists((dir / "config.yaml").string()).value_or("");
  std::vector<sb::RankResult> ranks;
  for (std::int64_t rank = 0; rank < o.ranks; ++rank) {
    ranks.push_back(make_rank(config_yaml, hash, dir.filename().string(), index, rank, o));
    fs::path file = dir / sb::rank_file_name(rank);
    if (fs::exists(file)) continue;  // from an interrupted generation
    sb::write_rank_file(ranks.back(), file.string());
  }
  // Rank 0's summary.json, as bench-train writes it (the history store reads it).
  sb::Value extra = sb::Value::map();
  extra.set("measured_steps", sb::Value::integer(o.steps - o.warmup));
  sb::write_summary_file(dir.string(), ranks.front(), "ok", "", extra,
                         sb::summarize(sb::summary_input_from_ranks(ranks)));
  sb::PointRecord p;
  p.status = sb::PointStatus::kOk;
  p.config_hash = hash;
  p.attempt = 1;
  p.exit_code = 0;
  p.launcher = "srun";
  p.command = {"srun", "bench-train"};
  p.host = "node-0";
  p.pid = 1;
  p.slurm_job_id = "4242";
  p.started = "2026-11-22T10:00:00Z";
  p.ended = "2026-11-22T10:02:00Z";
  p.seconds = 120;
  sb::write_point_record(dir.string(), p);
}

int run(const Options& o) {
  fs::path manifest = fs::path(o.out) / "manifest.json";
  std::optional<std::string> text = sb::read_file_if_exists(manifest.string());
  if (!text) {
    std::fprintf(stderr, "make_results_tree: no %s: plan the sweep first (bench-sweep plan)\n",
                 manifest.c_str());
    return 2;
  }
  sb::Value m = sb::parse_yaml(*text, manifest.string());
  const sb::Value* points = m.find("points");
  if (points == nullptr || !points->is_list()) {
    std::fprintf(stderr, "make_results_tree: %s has no points\n", manifest.c_str());
    return 2;
  }
  std::vector<std::pair<std::string, std::string>> pending;  // tag, hash
  for (const sb::Value& p : points->items()) {
    pending.emplace_back(sb::text_field(p, "tag"), sb::text_field(p, "config_hash"));
  }
  // Worker processes, each taking every jobs-th point: HDF5 serializes threads.
  std::vector<pid_t> children;
  for (std::int64_t j = 0; j < o.jobs; ++j) {
    pid_t pid = ::fork();
    if (pid == 0) {
      try {
        for (size_t i = static_cast<size_t>(j); i < pending.size();
             i += static_cast<size_t>(o.jobs)) {
          fill_point(fs::path(o.out) / pending[i].first, pending[i].second,
                     static_cast<std::int64_t>(i), o);
        }
      } catch (const sb::Error& e) {
        std::fprintf(stderr, "make_results_tree: %s\n", e.message().c_str());
        ::_exit(1);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  std::printf("make_results_tree: %zu points x %lld ranks x %lld steps in %s\n", pending.size(),
              static_cast<long long>(o.ranks), static_cast<long long>(o.steps), o.out.c_str());
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--out") {
      o.out = v;
    } else if (k == "--ranks") {
      o.ranks = std::atoll(v.c_str());
    } else if (k == "--steps") {
      o.steps = std::atoll(v.c_str());
    } else if (k == "--jobs") {
      o.jobs = std::atoll(v.c_str());
    } else {
      std::fprintf(stderr, "make_results_tree: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (o.out.empty() || o.ranks < 1 || o.steps < 1 || o.jobs < 1) {
    std::fprintf(stderr,
                 "usage: make_results_tree --out PLANNED_DIR [--ranks 8] [--steps 1000] "
                 "[--jobs 2]\n");
    return 2;
  }
  try {
    return run(o);
  } catch (const sb::Error& e) {
    std::fprintf(stderr, "make_results_tree: %s\n", e.message().c_str());
    return 2;
  }
}
