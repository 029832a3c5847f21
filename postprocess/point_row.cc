#include "postprocess/point_row.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "config/command_spec.h"
#include "config/config.h"
#include "config/schema.h"
#include "config/yaml_io.h"
#include "layout/claim.h"
#include "layout/paths.h"
#include "layout/point_record.h"
#include "layout/point_status.h"
#include "metrics/infer_metrics.h"
#include "metrics/serve_columns.h"
#include "metrics/statistics.h"
#include "metrics/summary.h"
#include "os/fs.h"
#include "postprocess/point_cells.h"
#include "postprocess/point_columns.h"
#include "postprocess/point_series.h"
#include "postprocess/table_ops.h"
#include "predict/memory_model.h"
#include "predict/time_model.h"
#include "results/rank_reader.h"
#include "sweep/expand.h"
#include "sweep/plan_output.h"
#include "sweep/references.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {

namespace fs = std::filesystem;

// A file whose presence makes its directory a point.
bool is_point_file(const std::string& name) {
  return name == kConfigFile || name == kStatusFile || is_rank_file_name(name);
}

// What the manifest beside a point says about it (index, scenario, repeat, sweep).
const ManifestPoint* Manifests::entry(const fs::path& point_dir, std::string* sweep) {
  const Manifest& manifest = of_directory(point_dir.parent_path());
  *sweep = manifest.sweep;
  return manifest.find(point_dir.filename().string());
}

const Manifest& Manifests::of_directory(const fs::path& dir) {
  auto it = cache_.find(dir.string());
  if (it == cache_.end()) {
    Value root = read_json_or_yaml(dir / kManifestFile, warnings_).value_or(Value());
    it = cache_.emplace(dir.string(), Manifest::from_value(root)).first;
  }
  return it->second;
}

std::vector<std::string> sweep_axes(const std::vector<std::string>& point_dirs) {
  std::vector<std::string> warnings, axes;
  Manifests manifests(&warnings);
  std::set<std::string> seen;
  for (const std::string& d : point_dirs) {
    if (!seen.insert(fs::path(d).parent_path().string()).second) continue;
    for (const std::string& k : manifests.of_directory(fs::path(d).parent_path()).varying_keys) {
      if (std::find(axes.begin(), axes.end(), k) == axes.end()) axes.push_back(k);
    }
  }
  return axes;
}

namespace {

// The memory columns of docs/extract.md into `row`: fms-acceleration's from rank 0's stages (as
// the Hugging Face Trainer logs rank 0 only), the sampler's over every rank.
void memory_columns(const std::vector<RankResult>& ranks, std::map<std::string, Value>* row) {
  const RankResult* rank0 = &ranks.front();
  for (const RankResult& r : ranks) {
    if (r.rank == 0) rank0 = &r;
  }
  const StageMemory* before = nullptr;
  std::map<std::string, const StageMemory*> stage;
  for (const StageMemory& m : rank0->memory_stages) {
    stage[m.stage] = &m;
    if (m.stage == "before_init") before = &m;
  }
  // The measured stage: training's, or bench-infer's generations.
  const char* work = stage.count("train") != 0 ? "train" : "generate";
  if (before != nullptr && stage.count("init") != 0 && stage.count(work) != 0) {
    // In double: the values come from files, and int64 differences could overflow.
    // The Hugging Face Trainer's figures are of allocated bytes: on a GPU, from 2026-12-01 the
    // stages' alloc_* columns (their begin, bytes and peak the device's memory there).
    const bool gpu_device = rank0->memory_stage_source == "cuda_device";
    const StageMemory* init = stage["init"];
    const StageMemory* train = stage[work];
    auto end_of = [&](const StageMemory* m) {
      return static_cast<double>(gpu_device ? std::max<std::int64_t>(0, m->alloc_end) : m->end);
    };
    auto begin_of = [&](const StageMemory* m) {
      if (!gpu_device) return static_cast<double>(m->begin);
      return m == train ? end_of(init) : m == init ? end_of(before) : 0.0;
    };
    auto alloc = [&](const StageMemory* m) { return end_of(m) - begin_of(m); };
    auto peaked = [&](const StageMemory* m) {
      const double peak = static_cast<double>(gpu_device ? m->alloc_peak : m->peak);
      return std::max(0.0, peak - end_of(m));
    };
    double base = end_of(before);
    // A GPU file without the allocated bytes (before 2026-11-27) has nothing to give there.
    if (!gpu_device || (init->alloc_end >= 0 && train->alloc_end >= 0)) {
      (*row)["mem_torch_mem_alloc_in_bytes"] = number_or_null(base + alloc(init) + alloc(train));
      (*row)["mem_peak_torch_mem_alloc_in_bytes"] =
          number_or_null(base + alloc(init) + peaked(init) + alloc(train) + peaked(train));
    }
  }
  std::vector<double> reserved, cpu;
  double ram_peak = -1;
  for (const RankResult& r : ranks) {
    const std::vector<std::int64_t>& dev = r.samples.device_bytes;
    if (r.samples.device_source == "nvml" && !dev.empty()) {
      reserved.push_back(static_cast<double>(*std::max_element(dev.begin(), dev.end())) -
                         static_cast<double>(dev.front()));
    }
    // -1: not sampled (the first sample, which has no interval to measure over, or
    // metrics.system off): no 0 to average in.
    for (double c : r.samples.cpu_percent) {
      if (c >= 0) cpu.push_back(c);
    }
    for (double mb : r.samples.ram_used_mb) ram_peak = std::max(ram_peak, mb);
  }
  if (!reserved.empty()) (*row)["mem_nvidia_mem_reserved"] = number_or_null(mean(reserved));
  if (!cpu.empty()) (*row)["cpu_percent_mean"] = Value::real(mean(cpu));
  if (ram_peak >= 0) (*row)["ram_peak_mb"] = Value::real(ram_peak);
}

// A command's figures: rank 0's (the program's own report; docs/commands.md), its exit code and
// duration, and each metric's unit.
void command_columns(const CommandResult& c, std::map<std::string, Value>* row) {
  Value units = Value::map();
  for (const CommandMetric& m : c.metrics) {
    if (!m.found) {
      (*row)[m.name] = Value::null();
    } else if (m.is_text) {
      (*row)[m.name] = Value::string(m.text);
    } else if (m.reduce == "all") {
      Value list = Value::list();
      for (double v : m.values) list.items().push_back(number_or_null(v));
      (*row)[m.name] = list;
    } else if (m.reduce == "count") {
      (*row)[m.name] = Value::integer(static_cast<std::int64_t>(m.value));
    } else {
      (*row)[m.name] = number_or_null(m.value);
    }
    units.set(m.name, Value::string(m.unit));
  }
  if (c.term_signal == 0 && c.exit_code >= 0) (*row)["exit_code"] = Value::integer(c.exit_code);
  (*row)["seconds"] = Value::real(c.seconds);
  (*row)["units"] = units;
}

// The predictions of bench-sweep plan --estimate (uncalibrated) beside what was measured, and
// their relative error, (predicted - measured) / measured: the peak of counted allocations per
// rank (mem_alloc_peak_bytes), a step's median (step_time_median_s) or a generation's
// (e2e_p50_s), and the point's device-hours.
// The prediction is of the point as it ran: a GPU the config does not name is the device the
// rank file names, a CPU rank's cores the threads it used (not the extracting machine's), the
// decode steps CUDA graphs where the rank file says they were.
void prediction_columns(const Value& config, const RankResult& lead, bool infer,
                        std::map<std::string, Value>* row) {
  Value resolved = config;
  const Value* hardware = resolved.find_path("hardware.name");
  if (lead.device_type == "cuda" && !lead.device_name.empty() &&
      (hardware == nullptr || hardware->is_null())) {
    resolved.set_path("hardware.name", Value::string(lead.device_name));
  }
  const Value* cpus = resolved.find_path("launch.cpus_per_rank");
  if (lead.device_type == "cpu" && lead.threads > 0 && (cpus == nullptr || cpus->is_null())) {
    resolved.set_path("launch.cpus_per_rank", Value::integer(lead.threads));
  }
  // Whether the decode steps were CUDA graphs, as the rank file says (its files from before
  // infer.cuda_graph: not), not as the config asked.
  if (infer && lead.device_type == "cuda") {
    resolved.set_path("infer.cuda_graph", Value::boolean(lead.infer.cuda_graph));
  }
  auto measured = [&](const char* name) {
    auto it = row->find(name);
    return it != row->end() && it->second.is_number() ? it->second.as_float() : 0.0;
  };
  auto error = [](double predicted, double actual) {
    return actual > 0 ? Value::real(predicted / actual - 1) : Value::null();
  };
  MemoryPrediction m;
  if (predict_point_memory(resolved, &m)) {
    (*row)["mem_pred_peak_bytes"] = number_or_null(m.peak);
    (*row)["mem_pred_error"] = error(m.peak, measured("mem_alloc_peak_bytes"));
    // Against the figure that decides an OOM: the resident set's high-water mark on a CPU, the
    // device's memory on a GPU, which rank files hold from 2026-12-01 (stage_source
    // cuda_device; before, mem_peak_bytes was the allocated peak there, nothing to compare).
    const bool measured_alike =
        lead.device_type != "cuda" || lead.memory_stage_source == "cuda_device";
    if (m.resident > 0 && measured_alike) {
      (*row)["mem_pred_resident_bytes"] = Value::real(m.resident);
      (*row)["mem_pred_resident_error"] = error(m.resident, measured("mem_peak_bytes"));
    }
  }
  TimePrediction t;
  if (predict_point_time(resolved, &t) && t.known) {
    (*row)["time_pred_step_s"] = Value::real(t.step_s);
    (*row)["time_pred_error"] =
        error(t.step_s, measured(infer ? "e2e_p50_s" : "step_time_median_s"));
    (*row)["time_pred_device_hours"] = Value::real(t.device_hours);
    if (!infer) {
      (*row)["time_pred_comm_bytes"] = Value::real(t.comm_bytes);
      (*row)["time_pred_comm_error"] = error(t.comm_bytes, measured("comm_bytes_per_step"));
    }
  }
}

}  // namespace

const std::vector<std::string>& noise_columns() {
  static const std::vector<std::string> c = {"step_time_cv", "ttft_cv", "e2e_cv"};
  return c;
}

void mark_noise(std::map<std::string, Value>* row, double threshold) {
  bool any = false, noisy = false;
  for (const std::string& c : noise_columns()) {
    auto it = row->find(c);
    if (it == row->end() || !it->second.is_number() || !std::isfinite(it->second.as_float()))
      continue;
    any = true;
    noisy = noisy || it->second.as_float() > threshold;
  }
  if (any) (*row)["noisy"] = Value::boolean(noisy);
}

void mark_target(std::map<std::string, Value>* row) {
  std::optional<double> target = cell_number(*row, "metrics.target_ci");
  if (!target) return;
  // A training's mean step time, a generation's mean end-to-end time.
  const bool infer = cell_number(*row, "e2e_ci_low_s").has_value();
  std::optional<double> low = cell_number(*row, infer ? "e2e_ci_low_s" : "step_time_ci_low_s");
  std::optional<double> high = cell_number(*row, infer ? "e2e_ci_high_s" : "step_time_ci_high_s");
  const bool met = low && high && *high + *low > 0 &&
                   (*high - *low) / (*high + *low) <= *target;  // half-width over the middle
  (*row)["target_met"] = Value::boolean(met);
}

void config_cells(const Value& config, std::map<std::string, Value>* row) {
  // A section only one workload reads (infer.*, train.*) stays empty for the others.
  const Value* benchmark = config.find_path("benchmark");
  for (const KeySpec& k : Schema::get().keys()) {
    if (benchmark != nullptr && benchmark->is_string() && !k.applies_to(benchmark->as_string())) {
      continue;
    }
    const Value* v = config.find_path(k.path);
    if (v == nullptr) continue;
    if (k.type == KeyType::kFreeMap) {
      for (const Value::Entry& e : v->entries()) (*row)[k.path + "." + e.key] = e.value;
    } else {
      (*row)[k.path] = *v;
    }
  }
}

namespace {

// One point's directory while its row is made, between the steps of extract_point.
struct PointRead {
  PointRead(const std::string& point_dir, ExtractedPoint* point)
      : d(point_dir), dir(point_dir), out(*point), row(point->row), warnings(point->warnings) {}

  const std::string& d;  // as given (warnings name it so)
  const fs::path dir;
  ExtractedPoint& out;
  std::map<std::string, Value>& row;
  std::vector<std::string>& warnings;
  std::string incomplete;       // the first reason the files do not make one run
  std::string planned_hash;     // the config this directory was planned for
  std::optional<Value> record;  // status.json
  std::vector<fs::path> files;  // the rank files, sorted
  std::vector<RankResult> ranks;
  std::map<std::int64_t, std::string> file_of;  // rank -> the file that holds it
  std::optional<Value> config, resolved;

  void flag(const std::string& why) {
    if (incomplete.empty()) incomplete = why;
  }
  // A file that is there but cannot be read makes the row incomplete (and a warning).
  std::optional<Value> read_point_file(const char* name) {
    size_t before = warnings.size();
    std::optional<Value> v = read_json_or_yaml(dir / name, &warnings);
    if (warnings.size() != before) flag(std::string(name) + " cannot be read");
    return v;
  }
};

// What the manifest beside the point says: its sweep, place, repeat and planned config.
void manifest_cells(PointRead* p, Manifests& manifests) {
  std::string sweep;
  p->row["tag"] = Value::string(p->dir.filename().string());
  if (const ManifestPoint* e = manifests.entry(p->dir, &sweep)) {
    if (e->index) p->row["index"] = Value::integer(*e->index);
    if (e->scenario) p->row["scenario"] = Value::string(*e->scenario);
    if (e->repeat) p->row["repeat"] = Value::integer(*e->repeat);
    // Only points no longer in their sweep are marked (bench-extract --removed).
    if (!e->in_sweep) p->row["in_sweep"] = Value::boolean(false);
    p->planned_hash = e->config_hash;
  }
  if (!sweep.empty()) p->row["sweep"] = Value::string(sweep);
}

// Every rank's file, read and checked: one world size, each rank once, all of them. `unread`:
// why they are not read at all.
void read_ranks(PointRead* p, const std::string& unread, Series series) {
  std::error_code ec;
  fs::directory_iterator listing(p->dir, ec);
  for (; !ec && listing != fs::directory_iterator(); listing.increment(ec)) {
    std::string name = listing->path().filename().string();
    if (is_rank_file_name(name)) p->files.push_back(listing->path());
  }
  if (ec) {
    p->warnings.push_back(p->d + ": cannot be read: " + ec.message());
    p->flag("its directory cannot be read (" + ec.message() + ")");
  }
  std::sort(p->files.begin(), p->files.end());
  std::vector<RankResult>& ranks = p->ranks;
  std::string first_name;  // the first readable file
  if (!unread.empty()) {
    p->warnings.push_back(p->d + ": " + unread);
    p->flag(unread);
    p->files.clear();
  }
  for (const fs::path& f : p->files) {
    // The sampler's times are read only for the system series.
    RankRead read = read_rank_file(
        f.string(), series == Series::kSystem ? RankReadScope::kAll : RankReadScope::kSummary);
    for (const std::string& problem : read.problems)
      p->warnings.push_back(f.string() + ": " + problem);
    std::string name = f.filename().string();
    if (!read.result) {
      p->flag(name + " cannot be read");
      continue;
    }
    if (ranks.empty()) {
      first_name = name;
    } else if (read.result->world_size != ranks.front().world_size) {
      p->flag(name + " says world_size " + std::to_string(read.result->world_size) + ", " +
              first_name + " " + std::to_string(ranks.front().world_size));
    }
    auto [it, fresh] = p->file_of.emplace(read.result->rank, name);
    if (!fresh) {
      p->flag(it->second + " and " + name + " both hold rank " + std::to_string(read.result->rank));
    }
    ranks.push_back(std::move(*read.result));
  }
  if (!ranks.empty() && static_cast<std::int64_t>(ranks.size()) != ranks.front().world_size) {
    p->flag(std::to_string(ranks.size()) + " rank files for world_size " +
            std::to_string(ranks.front().world_size));
  }
  // Rank 0 first: it carries what the run shares (rank_reader.h). Complete means ranks
  // 0..world_size-1, each once.
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const RankResult& a, const RankResult& b) { return a.rank < b.rank; });
}

// The files must be this point's and of one run: a rank file copied from another point, or
// one rank of another run of this point, would give a row with someone else's numbers.
void check_one_run(PointRead* p) {
  if (p->planned_hash.empty() && p->record) p->planned_hash = text_field(*p->record, "config_hash");
  if (p->ranks.empty()) return;
  const RankResult& lead = p->ranks.front();
  const std::string& lead_name = p->file_of[lead.rank];
  if (!p->planned_hash.empty() && !lead.config_hash.empty() &&
      lead.config_hash != p->planned_hash) {
    std::string why = lead_name + " holds the results of another config (config_hash " +
                      lead.config_hash.substr(0, 12) + "..., this point's is " +
                      p->planned_hash.substr(0, 12) + "...)";
    p->warnings.push_back((p->dir / lead_name).string() + ": " + why);
    p->flag(why);
  }
  for (const RankResult& other : p->ranks) {
    if (other.run_id == lead.run_id) continue;
    const std::string& name = p->file_of[other.rank];
    std::string why = name + " is from another run than " + lead_name + " (run_id " +
                      (other.run_id.empty() ? "missing" : other.run_id) + ", " +
                      (lead.run_id.empty() ? "missing" : lead.run_id) + ")";
    p->warnings.push_back((p->dir / name).string() + ": " + why);
    p->flag(why);
    break;
  }
}

// The config: the point's config.yaml, else the one the rank files carry; its cells.
void read_config(PointRead* p) {
  p->config = p->read_point_file(kConfigFile);
  if (!p->config && !p->ranks.empty()) {
    try {
      p->config = parse_yaml(p->ranks.front().config_yaml, (p->dir / p->files.front()).string());
    } catch (const Error&) {
    }
  }
  // The resolved config, for the predictions beside the measurements (an older or damaged
  // config that no longer resolves gives none).
  if (p->config) {
    try {
      p->resolved = resolve_config(normalize_partial_config(*p->config));
    } catch (const std::exception&) {
    }
  }
  if (p->config) config_cells(*p->config, &p->row);
}

// The performance references bench-sweep run checked (sweep/references.h).
void reference_cells(const PointRecord& rec, std::map<std::string, Value>* row) {
  (*row)["reference"] = Value::string(rec.reference);
  auto bound = [](double x) { return std::isfinite(x) ? Value::real(x) : Value::null(); };
  // Equally specific references of one metric all apply: the columns hold the first's
  // value and the range they allow together (a whole interval outside the one range
  // is outside one of theirs), and pass only when each passed.
  std::map<std::string, ReferenceCheck> merged;
  for (const Value& v : rec.references.items()) {
    std::optional<ReferenceCheck> c = ReferenceCheck::from_value(v);
    if (!c) continue;
    auto [it, fresh] = merged.emplace(c->metric, *c);
    if (fresh) continue;
    it->second.low = std::max(it->second.low, c->low);
    it->second.high = std::min(it->second.high, c->high);
    it->second.pass = it->second.pass && c->pass;
  }
  for (const auto& [metric, c] : merged) {
    const std::vector<std::string> cols = reference_columns(metric);
    (*row)[cols[0]] = Value::real(c.reference);
    (*row)[cols[1]] = bound(c.low);
    (*row)[cols[2]] = bound(c.high);
    (*row)[cols[3]] = Value::boolean(c.pass);
  }
}

// Status: decided as `bench-sweep status` decides it (layout/point_status.h), from
// status.json, the claim, summary.json and the rank files, with what reading them found.
// No liveness callback: bench-extract never asks SLURM. Returns whether the rank files make one
// whole run (their measurements are then the row's).
bool status_cells(PointRead* p) {
  PointEvidence evidence;
  if (p->record && p->record->is_map()) evidence.record = PointRecord::from_value(*p->record);
  evidence.claim = PointClaim::inspect(p->d);
  evidence.ranks = inspect_rank_files(p->d);
  evidence.point_dir = p->d;
  bool whole = evidence.ranks.problem.empty() && p->incomplete.empty();
  if (evidence.ranks.problem.empty()) evidence.ranks.problem = p->incomplete;
  if (evidence.ranks.run_status.empty() && !p->ranks.empty()) {
    evidence.ranks.run_status = p->ranks.front().status;
    evidence.ranks.run_reason = p->ranks.front().reason;
  }
  PointView view = decide_point_status(evidence, std::nullopt);
  if (!p->incomplete.empty() && view.status == PointStatus::kPending) {
    view.status = PointStatus::kIncomplete;  // a status.json that cannot be read
    view.note = p->incomplete;
  }
  std::string status = to_string(view.status);
  const std::string& reason = view.note;
  p->out.incomplete = status == "incomplete";
  p->row["status"] = Value::string(status);
  p->row["reason"] = Value::string(reason);
  // With bench-sweep run --jobs: where the point ran and beside which points.
  if (evidence.record) {
    const PointRecord& rec = *evidence.record;
    if (!rec.cpus.empty()) p->row["cpus"] = Value::string(rec.cpus);
    if (!rec.gpus.empty()) p->row["gpus"] = Value::string(rec.gpus);
    if (!rec.nodes.empty()) p->row["nodes"] = Value::string(rec.nodes);
    if (rec.beside) p->row["beside"] = Value::string(join(*rec.beside, " "));
    if (view.status == PointStatus::kOk && !rec.reference.empty() && rec.references.is_list()) {
      reference_cells(rec, &p->row);
    }
  }
  return whole;
}

// The measurements of a training or inference point (summary.h, infer_metrics.h), or a command's
// or serve point's figures; returns its million tokens an hour (0 where it has none).
double metric_cells(const PointRead& p, std::map<std::string, Value>* row) {
  const std::vector<RankResult>& ranks = p.ranks;
  // Million tokens an hour: trained tokens, or generated ones for inference.
  double mt_per_hour = 0;
  const bool infer = ranks.front().benchmark == "infer";
  if (ranks.front().benchmark == "command" || ranks.front().benchmark == "serve") {
    // A serve point's figures are its server's command's (bench-serve writes them so).
    command_columns(ranks.front().command, row);
    memory_columns(ranks, row);  // the sampler's CPU and RAM (no stages, no GPU)
    // A command that declares what it runs (command.predict_as) is predicted as that point.
    if (p.resolved) {
      const std::string as = predicted_benchmark(*p.resolved);
      if (!as.empty()) prediction_columns(*p.resolved, ranks.front(), as == "infer", row);
    }
    return mt_per_hour;
  }
  std::vector<Metric> metrics;
  if (infer) {
    metrics = summarize_infer(infer_summary_input_from_ranks(ranks));
  } else {
    const SummaryInput in = summary_input_from_ranks(ranks);
    metrics = summarize(in);
    // One run's samples for bench-compare (statistics.h); in the row, never a column.
    Value means = Value::list();
    for (double m : batch_means(in.step_s)) means.items().push_back(Value::real(m));
    if (!means.items().empty()) (*row)[kStepBatchMeans] = std::move(means);
  }
  for (const Metric& m : metrics) {
    (*row)[m.name] = number_or_null(m.value);
    if (m.name == "mt_per_hour") mt_per_hour = m.value;
    if (m.name == "output_tps" && std::isfinite(m.value)) {
      mt_per_hour = m.value * 3600 / 1e6;
    }
  }
  memory_columns(ranks, row);
  if (p.resolved) prediction_columns(*p.resolved, ranks.front(), infer, row);
  return mt_per_hour;
}

// What a whole run measured: where and when, its metrics, its cost, its profile, its series.
void measurement_cells(PointRead* p, double price_per_hour, Series series) {
  const RankResult& lead = p->ranks.front();
  std::map<std::string, Value>& row = p->row;
  row["world_size"] = Value::integer(lead.world_size);
  row["device"] = Value::string(lead.device_type);
  // Where and when, for figures' titles: rank 0's device (a GPU's or CPU's name) and start.
  if (!lead.device_name.empty()) row["device_name"] = Value::string(lead.device_name);
  if (!lead.start_time.empty()) row["started"] = Value::string(lead.start_time);
  const double mt_per_hour = metric_cells(*p, &row);
  double price = price_per_hour;
  if (auto it = row.find("hardware.price_per_hour"); it != row.end() && it->second.is_number()) {
    price = it->second.as_float();
  }
  if (price >= 0 && mt_per_hour > 0) {
    row["cost_usd_per_mtok"] =
        Value::real(price * static_cast<double>(lead.world_size) / mt_per_hour);
  }
  if (!lead.profile_trace.empty()) {
    row["profile_trace"] = Value::string((p->dir / lead.profile_trace).string());
  }
  if (series != Series::kNone) p->out.series = series_rows(series, p->ranks, row);
}

}  // namespace

// One point's row, and what went wrong reading it.
// `unread`: why the rank files were not read (their reader crashed or hung on them); the row is
// then built from what else the directory says, and is incomplete.
ExtractedPoint extract_point(const std::string& d, Manifests& manifests, double price_per_hour,
                             const std::string& unread, Series series) {
  ExtractedPoint out;
  PointRead p(d, &out);
  manifest_cells(&p, manifests);
  p.record = p.read_point_file(kStatusFile);
  read_ranks(&p, unread, series);
  check_one_run(&p);
  read_config(&p);
  const bool whole = status_cells(&p);
  if (!p.ranks.empty() && whole) measurement_cells(&p, price_per_hour, series);
  return out;
}

}  // namespace sweepbench
