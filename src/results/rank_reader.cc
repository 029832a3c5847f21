#include "results/rank_reader.h"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "results/hdf5_reader.h"
#include "results/rank_fields.h"

namespace sweepbench {
namespace {

using h5::Column;
using h5::Id;
using h5::native_type;
using h5::Reader;
using h5::ValueOf;

// Sets `out` when the value could be read; the problem is recorded otherwise.
template <typename T, typename U>
void take(const std::optional<T>& value, U* out) {
  if (value) *out = static_cast<U>(*value);
}

// The statuses bench-train writes (rank_result.h).
bool known_status(const std::string& s) {
  for (const char* known : {"ok", "oom", "timeout", "cancelled", "failed", "running"}) {
    if (s == known) return true;
  }
  return false;
}

// bench-infer's group: the shapes and the roofline figures (rank 0's serve the run), the runs
// and the token times of every rank. The generated ids are for people and h5py, not read here.
void read_infer(Reader& in, hid_t g, bool lead, InferResult& n) {
  const std::string p = "infer/";
  if (lead) {
    take(in.integer(g, p, "batch_size"), &n.batch_size);
    take(in.integer(g, p, "input_tokens"), &n.input_tokens);
    take(in.integer(g, p, "output_tokens"), &n.output_tokens);
    take(in.integer(g, p, "num_beams"), &n.num_beams);
    take(in.integer(g, p, "warmup_runs"), &n.warmup_runs);
    take(in.integer(g, p, "runs_planned"), &n.runs_planned);
    take(in.text(g, p, "kv_cache"), &n.kv_cache);
    take(in.text(g, p, "dtype"), &n.dtype);
    take(in.text(g, p, "decoding"), &n.decoding);
    if (auto t = in.integer(g, p, "token_metrics")) n.token_metrics = *t != 0;
    if (auto c = in.integer(g, p, "cuda_graph")) n.cuda_graph = *c != 0;  // absent: files before
    take(in.real(g, p, "prefill_flops"), &n.prefill_flops);
    take(in.real(g, p, "decode_flops"), &n.decode_flops);
    take(in.real(g, p, "decode_bytes"), &n.decode_bytes);
    take(in.real(g, p, "weight_bytes"), &n.weight_bytes);
    take(in.real(g, p, "kv_cache_bytes"), &n.kv_cache_bytes);
    take(in.real(g, p, "peak_bandwidth_gbs"), &n.peak_bandwidth_gbs);
    take(in.text(g, p, "peak_bandwidth_source"), &n.peak_bandwidth_source);
  }
  std::optional<std::vector<std::int64_t>> run, tokens, trun, position;
  std::optional<std::vector<std::uint8_t>> warmup;
  std::optional<std::vector<double>> ttft, e2e, seconds;
  in.table(g, "runs",
           {{"run", &run},
            {"warmup", &warmup},
            {"ttft_s", &ttft},
            {"e2e_s", &e2e},
            {"tokens", &tokens}});
  if (run && warmup && ttft && e2e && tokens) {
    size_t k = run->size();
    if (warmup->size() != k || ttft->size() != k || e2e->size() != k || tokens->size() != k) {
      in.problem("infer/runs", "its columns have different lengths");
    } else {
      for (size_t i = 0; i < k; ++i) {
        n.runs.push_back({(*run)[i], (*warmup)[i] != 0, (*ttft)[i], (*e2e)[i], (*tokens)[i]});
      }
    }
  }
  in.table(g, "token_times", {{"run", &trun}, {"position", &position}, {"seconds", &seconds}});
  if (trun && position && seconds) {
    size_t k = trun->size();
    if (position->size() != k || seconds->size() != k) {
      in.problem("infer/token_times", "its columns have different lengths");
    } else {
      for (size_t i = 0; i < k; ++i)
        n.token_times.push_back({(*trun)[i], (*position)[i], (*seconds)[i]});
    }
  }
}

// bench-command's group: what ran and the metrics it read (every value only in the full scope).
// The serve group's levels (its requests and chunks are written for people and h5py; bench-extract
// reads only the levels' table).
void read_serve(Reader& in, hid_t g, ServeResult& s) {
  const std::string p = "serve/";
  take(in.text(g, p, "mode"), &s.mode);
  take(in.text(g, p, "api"), &s.api);
  take(in.text(g, p, "model"), &s.model);
  take(in.real(g, p, "ready_s"), &s.ready_s);
  take(in.text(g, p, "server_stop"), &s.server_stop);
  Id levels = in.group(g, "levels");
  if (!levels.ok()) return;
  const std::string lp = "serve/levels/";
  auto level = in.numbers<double>(levels.get(), lp, "level", H5T_NATIVE_DOUBLE);
  auto searched = in.numbers<std::uint8_t>(levels.get(), lp, "searched", H5T_NATIVE_UINT8);
  auto names = in.strings(levels.get(), lp, "metric_names");
  auto units = in.strings(levels.get(), lp, "metric_units");
  if (!(level && searched && names && units)) return;
  if (names->size() != units->size() || searched->size() != level->size()) {
    in.problem("serve/levels", "its columns have different lengths");
    return;
  }
  std::vector<std::vector<double>> values;
  for (const std::string& name : *names) {
    auto v = in.numbers<double>(levels.get(), lp, name.c_str(), H5T_NATIVE_DOUBLE);
    if (!v) return;
    if (v->size() != level->size()) {
      in.problem("serve/levels/" + name, "its length is not the number of levels");
      return;
    }
    values.push_back(std::move(*v));
  }
  s.levels = std::move(*level);
  s.searched = std::move(*searched);
  s.metric_names = std::move(*names);
  s.metric_units = std::move(*units);
  s.level_values = std::move(values);
}

void read_command(Reader& in, hid_t g, bool all, CommandResult& c) {
  const std::string p = "command/";
  take(in.integer(g, p, "exit_code"), &c.exit_code);
  take(in.integer(g, p, "term_signal"), &c.term_signal);
  take(in.real(g, p, "seconds"), &c.seconds);
  take(in.text(g, p, "stdout_log"), &c.stdout_log);
  take(in.text(g, p, "stderr_log"), &c.stderr_log);
  if (all) {
    take(in.strings(g, p, "argv"), &c.argv);
    take(in.text(g, p, "workdir"), &c.workdir);
  }
  auto name = in.strings(g, p, "metric_name");
  auto unit = in.strings(g, p, "metric_unit");
  auto source = in.strings(g, p, "metric_source");
  auto reduce = in.strings(g, p, "metric_reduce");
  auto problem = in.strings(g, p, "metric_problem");
  auto required = in.numbers<std::uint8_t>(g, p, "metric_required", H5T_NATIVE_UINT8);
  auto found = in.numbers<std::uint8_t>(g, p, "metric_found", H5T_NATIVE_UINT8);
  auto value = in.numbers<double>(g, p, "metric_value", H5T_NATIVE_DOUBLE);
  if (!(name && unit && source && reduce && problem && required && found && value)) return;
  size_t n = name->size();
  for (size_t size : {unit->size(), source->size(), reduce->size(), problem->size(),
                      required->size(), found->size(), value->size()}) {
    if (size != n) {
      in.problem("command/metric_*", "its columns have different lengths");
      return;
    }
  }
  // Text metrics (type: text) came within schema 4: files before them have none.
  std::optional<std::vector<std::string>> type, text;
  if (H5Lexists(g, "metric_type", H5P_DEFAULT) > 0) {
    type = in.strings(g, p, "metric_type");
    text = in.strings(g, p, "metric_text");
    if (!type || !text) return;
    if (type->size() != n || text->size() != n) {
      in.problem("command/metric_*", "its columns have different lengths");
      return;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    CommandMetric m;
    if (type && (*type)[i] == "text") {
      m.is_text = true;
      m.text = (*text)[i];
    }
    m.name = (*name)[i];
    m.unit = (*unit)[i];
    m.source = (*source)[i];
    m.reduce = (*reduce)[i];
    m.problem = (*problem)[i];
    m.required = (*required)[i] != 0;
    m.found = (*found)[i] != 0;
    m.value = (*value)[i];
    c.metrics.push_back(std::move(m));
  }
  // Every value is needed for reduce: all (a list in the table), so it is read in both scopes.
  auto values = in.numbers<double>(g, p, "values", H5T_NATIVE_DOUBLE);
  auto metric = in.numbers<std::int64_t>(g, p, "values_metric", H5T_NATIVE_INT64);
  if (!values || !metric) return;
  if (values->size() != metric->size()) {
    in.problem("command/values", "values and values_metric have different lengths");
    return;
  }
  for (size_t i = 0; i < values->size(); ++i) {
    std::int64_t k = (*metric)[i];
    if (k < 0 || static_cast<size_t>(k) >= n) {
      in.problem("command/values_metric",
                 "names metric " + std::to_string(k) + " of " + std::to_string(n));
      return;
    }
    c.metrics[static_cast<size_t>(k)].values.push_back((*values)[i]);
  }
}

// One rank file while it is read, between the steps of read_rank_file: the reader, the file, and
// what is read from it so far.
struct FileRead {
  FileRead(Reader& reader, hid_t file, bool every_value) : in(reader), f(file), all(every_value) {}

  Reader& in;
  const hid_t f;
  const bool all;  // RankReadScope::kAll
  // What the whole run shares (its config, shapes, FLOPs, evaluation loss) comes from rank 0;
  // in the summary scope the other ranks' files are read for their own measurements only.
  bool lead = false;
  std::optional<std::int64_t> schema;  // schema_version
  RankResult r;

  bool wanted_here(FieldScope needed_by) const {
    return needed_by == FieldScope::kEvery || (needed_by == FieldScope::kLead && lead) || all;
  }
};

// The core driver reads the file whole at open: one read instead of one per object. One
// property list serves every file (HDF5 ids are per process, like the files bench-extract's
// reader processes read one at a time).
Id open_rank_file(const std::string& path, std::vector<std::string>* problems) {
  static const hid_t fapl = [] {
    hid_t p = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(p, 1 << 20, 0);
    return p;
  }();
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
  if (!file.ok()) {
    // H5Fis_accessible is 1.12+; Debian 12 has 1.10.
    problems->push_back(H5Fis_hdf5(path.c_str()) <= 0
                            ? "not an HDF5 file (cut short, or not a result)"
                            : "cannot be opened");
  }
  return file;
}

// Identity: without these the file cannot be placed in its run. Returns whether it can be; sets
// x->lead and x->schema.
bool read_identity(FileRead* x) {
  Reader& in = x->in;
  std::optional<std::string> status = in.text(x->f, "", "status");
  std::optional<std::int64_t> rank = in.integer(x->f, "", "rank");
  std::optional<std::int64_t> world = in.integer(x->f, "", "world_size");
  if (status && !known_status(*status)) {
    in.problem("status", "is '" + *status + "', which no sweepbench writes (damaged?)");
    status.reset();
  }
  bool identity = status && rank && world && *world >= 1 && *rank >= 0 && *rank < *world;
  if (status && rank && world && !identity) {
    in.problem("rank", "is " + std::to_string(*rank) + " of world_size " + std::to_string(*world));
  }
  take(status, &x->r.status);
  take(rank, &x->r.rank);
  take(world, &x->r.world_size);
  x->lead = x->all || (rank && *rank == 0);
  x->schema = in.integer(x->f, "", "schema_version");
  if (x->schema && *x->schema > kResultsSchemaVersion) {
    in.problem("schema_version", std::to_string(*x->schema) + " is newer than this reader's " +
                                     std::to_string(kResultsSchemaVersion));
  }
  return identity;
}

// Every other root attribute, from the one list the writer writes too (rank_fields.h).
void read_root_attributes(FileRead* x) {
  auto present = [&](const auto& a) {
    return !a.since_within_schema || H5Aexists(x->f, a.name) > 0;
  };
  for (const TextAttr& a : kTextAttrs) {
    if (x->wanted_here(a.scope) && present(a)) take(x->in.text(x->f, "", a.name), &(x->r.*a.field));
  }
  for (const IntAttr& a : kIntAttrs) {
    if (x->wanted_here(a.scope) && present(a)) {
      take(x->in.integer(x->f, "", a.name), &(x->r.*a.field));
    }
  }
  for (const RealAttr& a : kRealAttrs) {
    if (x->wanted_here(a.scope) && present(a)) take(x->in.real(x->f, "", a.name), &(x->r.*a.field));
  }
}

constexpr size_t kColumns = std::size(kStepColumns);

// The step columns as read, by their place in kStepColumns (each in the type the column says).
struct StepValues {
  std::optional<std::vector<double>> reals[kColumns];
  std::optional<std::vector<std::int64_t>> ints[kColumns];
  std::optional<std::vector<std::uint8_t>> flags[kColumns];

  std::optional<size_t> size(size_t i) const {
    if (reals[i]) return reals[i]->size();
    if (ints[i]) return ints[i]->size();
    if (flags[i]) return flags[i]->size();
    return std::nullopt;
  }
};

size_t step_column_index(std::string_view name) {
  for (size_t i = 0; i < kColumns; ++i) {
    if (name == kStepColumns[i].name) return i;
  }
  return kColumns;
}

// The columns this scope wants, read into `v`. Schema 1 kept them as one dataset per column in a
// group; schema 2 as one table. Returns whether the steps are there.
bool read_step_columns(FileRead* x, StepValues* v) {
  std::vector<Column> wanted;
  for (size_t i = 0; i < kColumns; ++i) {
    const StepColumn& c = kStepColumns[i];
    if (!c.summary && !x->all) continue;
    if (c.real) wanted.push_back({c.name, &v->reals[i]});
    if (c.integer) wanted.push_back({c.name, &v->ints[i]});
    if (c.flag) wanted.push_back({c.name, &v->flags[i]});
  }
  if (!(x->schema && *x->schema == 1)) {
    x->in.table(x->f, "steps", wanted);
    return true;
  }
  Id g = x->in.group(x->f, "steps");
  if (!g.ok()) return false;
  for (const Column& c : wanted) {
    std::visit(
        [&](auto* out) {
          using T = ValueOf<decltype(out)>;
          *out = x->in.numbers<T>(g.get(), "steps/", c.name, native_type<T>());
        },
        c.out);
  }
  return true;
}

// Steps: every column must have one value per step; the columns are rank_fields.h's. Returns
// whether the steps could be read.
bool read_steps(FileRead* x) {
  StepValues v;
  const bool steps_found = read_step_columns(x, &v);
  const std::string sp = x->schema && *x->schema == 1 ? "steps/" : "steps.";
  const size_t step_i = step_column_index("step"), total_i = step_column_index("total_s"),
               measured_i = step_column_index("measured");
  if (!steps_found || !(v.ints[step_i] || !x->all) || !v.reals[total_i] || !v.flags[measured_i]) {
    return false;
  }
  const size_t n = v.reals[total_i]->size();
  bool steps_ok = true;
  for (size_t i = 0; i < kColumns; ++i) {
    std::optional<size_t> size = v.size(i);
    if (size && *size != n) {
      x->in.problem(sp + kStepColumns[i].name,
                    std::to_string(*size) + " values for " + std::to_string(n) + " steps");
      steps_ok = false;
    }
  }
  if (!steps_ok) return false;
  x->r.steps.resize(n);
  for (size_t k = 0; k < n; ++k) {
    StepRecord& s = x->r.steps[k];
    s.step = static_cast<std::int64_t>(k);  // unless the file says (a summary read)
    for (size_t i = 0; i < kColumns; ++i) {
      const StepColumn& c = kStepColumns[i];
      if (v.reals[i]) s.*c.real = (*v.reals[i])[k];
      if (v.ints[i]) s.*c.integer = (*v.ints[i])[k];
      if (v.flags[i]) s.*c.flag = (*v.flags[i])[k] != 0;
    }
  }
  return true;
}

void read_eval(FileRead* x) {
  Id g = x->in.group(x->f, "eval");
  if (!g.ok()) return;
  const std::string p = "eval/";
  EvalSummary& eval = x->r.eval;
  if (x->lead) {
    if (auto ran = x->in.integer(g.get(), p, "ran")) eval.ran = *ran != 0;
  }
  for (const auto& a : kEvalIntAttrs) {
    if (x->wanted_here(a.scope)) take(x->in.integer(g.get(), p, a.name), &(eval.*a.field));
  }
  for (const auto& a : kEvalRealAttrs) {
    if (x->wanted_here(a.scope)) take(x->in.real(g.get(), p, a.name), &(eval.*a.field));
  }
  for (const auto& a : kEvalSeries) {
    if (x->wanted_here(a.scope)) {
      take(x->in.numbers<double>(g.get(), p, a.name, H5T_NATIVE_DOUBLE), &(eval.*a.field));
    }
  }
}

using Int64Column = std::optional<std::vector<std::int64_t>>;

// The counted columns (kMemoryAllocColumns) are optional (older files); one of another length
// than the stages is a problem.
std::vector<Int64Column> read_counted_memory(FileRead* x, hid_t g, size_t stages) {
  std::vector<Int64Column> counted;
  for (const auto& c : kMemoryAllocColumns) {
    counted.emplace_back();
    if (!x->wanted_here(c.scope) || H5Lexists(g, c.name, H5P_DEFAULT) <= 0) continue;
    counted.back() = x->in.numbers<std::int64_t>(g, "memory/", c.name, H5T_NATIVE_INT64);
    if (counted.back() && counted.back()->size() != stages) {
      x->in.problem("memory", std::string(c.name) + " has another length than the stages");
      counted.back().reset();
    }
  }
  return counted;
}

// The memory stages. Other ranks' stages matter for their peaks only (mem_peak_bytes): no names,
// the columns of kMemoryColumns their scope asks for.
void read_memory(FileRead* x) {
  Id g = x->in.group(x->f, "memory");
  if (!g.ok()) return;
  const std::string p = "memory/";
  std::optional<std::vector<std::string>> names;
  if (x->lead) {
    take(x->in.text(g.get(), p, "stage_source"), &x->r.memory_stage_source);
    names = x->in.strings(g.get(), p, "stage");
  }
  std::vector<Int64Column> bytes;
  bool complete = !x->lead || names.has_value();
  for (const auto& c : kMemoryColumns) {
    if (x->wanted_here(c.scope)) {
      bytes.push_back(x->in.numbers<std::int64_t>(g.get(), p, c.name, H5T_NATIVE_INT64));
      complete = complete && bytes.back().has_value();
    } else {
      bytes.emplace_back();
    }
  }
  // The number of stages: the names' (rank 0), else the first column's.
  size_t stages = 0;
  bool known = false;
  if (names) {
    stages = names->size();
    known = true;
  }
  bool same_length = true;
  for (const auto& column : bytes) {
    if (!column) continue;
    if (!known) {
      stages = column->size();
      known = true;
    }
    same_length = same_length && column->size() == stages;
  }
  if (!complete) return;
  if (!same_length) {
    x->in.problem("memory", "its columns have different lengths");
    return;
  }
  std::vector<Int64Column> counted = read_counted_memory(x, g.get(), stages);
  for (size_t k = 0; k < stages; ++k) {
    StageMemory m;
    if (names) m.stage = (*names)[k];
    for (size_t i = 0; i < bytes.size(); ++i) {
      if (bytes[i]) m.*kMemoryColumns[i].field = (*bytes[i])[k];
    }
    for (size_t i = 0; i < counted.size(); ++i) {
      if (counted[i]) m.*kMemoryAllocColumns[i].field = (*counted[i])[k];
    }
    x->r.memory_stages.push_back(m);
  }
}

void read_samples(FileRead* x) {
  Id g = x->in.group(x->f, "samples");
  if (!g.ok()) return;
  const std::string p = "samples/";
  SampleSeries& m = x->r.samples;
  take(x->in.text(g.get(), p, "device_source"), &m.device_source);
  for (const auto& a : kSampleRealSeries) {
    if (x->wanted_here(a.scope)) {
      take(x->in.numbers<double>(g.get(), p, a.name, H5T_NATIVE_DOUBLE), &(m.*a.field));
    }
  }
  for (const auto& a : kSampleIntSeries) {
    // Device memory counts only where NVML measured it (mem_nvidia_mem_reserved).
    const bool nvml_only = a.field == &SampleSeries::device_bytes && m.device_source != "nvml";
    if (x->wanted_here(a.scope) && (x->all || !nvml_only)) {
      take(x->in.numbers<std::int64_t>(g.get(), p, a.name, H5T_NATIVE_INT64), &(m.*a.field));
    }
  }
}

// The workload's own group: bench-infer's, bench-command's, bench-serve's (and its command's).
void read_workload(FileRead* x) {
  RankResult& r = x->r;
  if (r.benchmark == "infer") {
    if (Id g = x->in.group(x->f, "infer"); g.ok()) read_infer(x->in, g.get(), x->lead, r.infer);
  }
  if (r.benchmark == "command" || r.benchmark == "serve") {
    if (Id g = x->in.group(x->f, "command"); g.ok())
      read_command(x->in, g.get(), x->all, r.command);
  }
  if (r.benchmark == "serve") {
    if (Id g = x->in.group(x->f, "serve"); g.ok()) read_serve(x->in, g.get(), r.serve);
  }
}

// Where and when, for tables' and figures' titles (bench-extract's device_name and started):
// read last, and a problem with them is no problem of the file's, so that what the row's numbers
// need is read exactly as before.
void read_where_and_when(FileRead* x) {
  std::vector<std::string> ignored;
  Reader extra(&ignored);
  for (const auto& [name, field] : {std::pair{"device_name", &RankResult::device_name},
                                    std::pair{"start_time", &RankResult::start_time}}) {
    if (H5Aexists(x->f, name) <= 0) continue;
    if (std::optional<std::string> v = extra.text(x->f, "", name)) x->r.*field = std::move(*v);
  }
}

}  // namespace

RankRead read_rank_file(const std::string& path, RankReadScope scope) {
  RankRead read;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // problems are reported, not printed by HDF5
  Id file = open_rank_file(path, &read.problems);
  if (!file.ok()) return read;
  Reader in(&read.problems);
  FileRead x(in, file.get(), scope == RankReadScope::kAll);
  const bool identity = read_identity(&x);
  read_root_attributes(&x);
  const bool steps_ok = read_steps(&x);
  read_eval(&x);
  read_memory(&x);
  read_samples(&x);
  read_workload(&x);
  if (x.lead && !x.all) read_where_and_when(&x);
  if (identity && steps_ok) read.result = std::move(x.r);
  return read;
}

}  // namespace sweepbench
