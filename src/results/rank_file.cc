#include "results/rank_file.h"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <utility>
#include <vector>

#include "config/yaml_io.h"
#include "os/fs.h"
#include "results/rank_fields.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

// HDF5's own message for the most recent failure on this thread.
std::string h5_message() {
  std::string text;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        auto* t = static_cast<std::string*>(out);
        if (!t->empty()) t->append("; ");
        t->append(e->desc ? e->desc : "?");
        return 0;
      },
      &text);
  return text.empty() ? "unknown HDF5 error" : text;
}

[[noreturn]] void h5_fail(const std::string& path, const char* call, const char* file, int line) {
  throw Error(
      ErrorKind::kIo, Mark::in(path), "",
      std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " + h5_message());
}

// Checks an HDF5 call (negative ids and statuses are failures).
#define H5_CHECK(call)                                                   \
  ([&]() {                                                               \
    auto h5_check_result_ = (call);                                      \
    if (h5_check_result_ < 0) h5_fail(path_, #call, __FILE__, __LINE__); \
    return h5_check_result_;                                             \
  }())

// An open HDF5 id closed on scope exit.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// Builds the file in memory (HDF5's core driver without a backing store): HDF5 never touches the
// disk, so a full disk is one failed write of ours, checked, instead of HDF5 failing half-way
// through its metadata and again in its exit handler (which crashed).
class Writer {
 public:
  explicit Writer(std::string path) : path_(std::move(path)) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors become exceptions, not stderr noise
    Handle fapl(H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)), H5Pclose);
    H5_CHECK(H5Pset_fapl_core(fapl.get(), 1 << 20, 0));
    file_ = H5_CHECK(H5Fcreate(path_.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()));
    string_type_ = H5_CHECK(H5Tcopy(H5T_C_S1));
    H5_CHECK(H5Tset_size(string_type_, H5T_VARIABLE));
    H5_CHECK(H5Tset_cset(string_type_, H5T_CSET_UTF8));
  }
  ~Writer() {
    if (string_type_ >= 0) H5Tclose(string_type_);
    if (file_ >= 0) H5Fclose(file_);
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  hid_t group(const std::string& name) {
    hid_t g = H5_CHECK(H5Gcreate2(file_, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    groups_.push_back(g);
    return g;
  }
  hid_t root() const { return file_; }

  void attr(hid_t where, const char* name, const std::string& value) {
    Handle space(H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
    Handle a(H5_CHECK(H5Acreate2(where, name, string_type_, space.get(), H5P_DEFAULT, H5P_DEFAULT)),
             H5Aclose);
    // Text from programs' output may hold bytes that are not UTF-8, or NULs (which would cut
    // it): the file holds it as valid UTF-8, so that its reader never calls it damaged.
    std::string text = valid_utf8(value);
    const char* p = text.c_str();
    H5_CHECK(H5Awrite(a.get(), string_type_, &p));
  }
  void attr(hid_t where, const char* name, std::int64_t value) {
    scalar_attr(where, name, H5T_NATIVE_INT64, H5T_STD_I64LE, &value);
  }
  void attr(hid_t where, const char* name, double value) {
    scalar_attr(where, name, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, &value);
  }

  void dataset(hid_t where, const char* name, const std::vector<double>& v) {
    array(where, name, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, v.data(), v.size());
  }
  void dataset(hid_t where, const char* name, const std::vector<std::int64_t>& v) {
    array(where, name, H5T_NATIVE_INT64, H5T_STD_I64LE, v.data(), v.size());
  }
  void dataset(hid_t where, const char* name, const std::vector<std::uint8_t>& v) {
    array(where, name, H5T_NATIVE_UINT8, H5T_STD_U8LE, v.data(), v.size());
  }
  void dataset(hid_t where, const char* name, const std::vector<std::string>& v) {
    std::vector<std::string> texts;
    texts.reserve(v.size());
    for (const std::string& s : v) texts.push_back(valid_utf8(s));  // as attr() does
    std::vector<const char*> ptrs;
    for (const std::string& s : texts) ptrs.push_back(s.c_str());
    array(where, name, string_type_, string_type_, ptrs.data(), ptrs.size());
  }

  // A member of a table: its name, offset in the row, type in memory and in the file.
  struct Member {
    const char* name;
    size_t offset;
    hid_t native, stored;
  };
  static Member i64(const char* name, size_t offset) {
    return {name, offset, H5T_NATIVE_INT64, H5T_STD_I64LE};
  }
  static Member f64(const char* name, size_t offset) {
    return {name, offset, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE};
  }
  static Member u8(const char* name, size_t offset) {
    return {name, offset, H5T_NATIVE_UINT8, H5T_STD_U8LE};
  }

  // A table: a 1-D compound dataset of `rows`, members in the documented order, packed in the
  // file. One object for the reader to open where a column each would be many
  // (docs/performance.md).
  template <class Row>
  void table(hid_t where, const char* name, const std::vector<Row>& rows,
             const std::vector<Member>& members) {
    table(where, name, sizeof(Row), rows.data(), rows.size(), members);
  }
  void table(hid_t where, const char* name, size_t row_size, const void* rows, size_t count,
             const std::vector<Member>& members) {
    Handle mem(H5_CHECK(H5Tcreate(H5T_COMPOUND, row_size)), H5Tclose);
    Handle file(H5_CHECK(H5Tcreate(H5T_COMPOUND, row_size)), H5Tclose);
    for (const Member& m : members) {
      H5_CHECK(H5Tinsert(mem.get(), m.name, m.offset, m.native));
      H5_CHECK(H5Tinsert(file.get(), m.name, m.offset, m.stored));
    }
    H5_CHECK(H5Tpack(file.get()));
    array(where, name, mem.get(), file.get(), rows, count);
  }

  // The steps as one table (schema 2), its columns from rank_fields.h: each row packed in memory
  // as in the file (8 bytes a number, 1 a flag).
  void steps_table(const std::vector<StepRecord>& steps) {
    std::vector<Member> members;
    size_t width = 0;
    for (const StepColumn& c : kStepColumns) {
      members.push_back(c.real      ? f64(c.name, width)
                        : c.integer ? i64(c.name, width)
                                    : u8(c.name, width));
      width += c.flag ? 1 : 8;
    }
    std::vector<unsigned char> rows(steps.size() * width);
    unsigned char* at = rows.data();
    for (const StepRecord& s : steps) {
      for (const StepColumn& c : kStepColumns) {
        if (c.real) {
          std::memcpy(at, &(s.*c.real), 8);
          at += 8;
        } else if (c.integer) {
          std::memcpy(at, &(s.*c.integer), 8);
          at += 8;
        } else {
          *at++ = static_cast<unsigned char>(s.*c.flag ? 1 : 0);
        }
      }
    }
    table(file_, "steps", width, rows.data(), steps.size(), members);
  }

  // bench-infer's runs and token times (schema 3).
  void runs_table(hid_t where, const std::vector<InferRunRecord>& runs) {
    struct Row {
      std::int64_t run;
      std::uint8_t warmup;
      double ttft_s, e2e_s;
      std::int64_t tokens;
    };
    std::vector<Row> rows;
    for (const InferRunRecord& r : runs) {
      rows.push_back({r.run, static_cast<std::uint8_t>(r.warmup), r.ttft_s, r.e2e_s, r.tokens});
    }
    table(where, "runs", rows,
          {i64("run", offsetof(Row, run)), u8("warmup", offsetof(Row, warmup)),
           f64("ttft_s", offsetof(Row, ttft_s)), f64("e2e_s", offsetof(Row, e2e_s)),
           i64("tokens", offsetof(Row, tokens))});
  }
  void token_times_table(hid_t where, const std::vector<TokenTime>& times) {
    table(where, "token_times", times,
          {i64("run", offsetof(TokenTime, run)), i64("position", offsetof(TokenTime, position)),
           f64("seconds", offsetof(TokenTime, seconds))});
  }

  // An int64 array of any shape (row-major `values`).
  void dataset(hid_t where, const char* name, const std::vector<std::int64_t>& values,
               const std::vector<hsize_t>& dims) {
    Handle space(H5_CHECK(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)),
                 H5Sclose);
    Handle d(H5_CHECK(H5Dcreate2(where, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                 H5P_DEFAULT)),
             H5Dclose);
    if (!values.empty()) {
      H5_CHECK(H5Dwrite(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
    }
  }

  // The finished file's bytes.
  std::string image() {
    for (hid_t g : groups_) H5Gclose(g);
    groups_.clear();
    H5_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL));
    ssize_t size = H5_CHECK(H5Fget_file_image(file_, nullptr, 0));
    std::string bytes(static_cast<size_t>(size), '\0');
    H5_CHECK(H5Fget_file_image(file_, bytes.data(), bytes.size()));
    hid_t f = file_;
    file_ = -1;
    H5_CHECK(H5Fclose(f));
    return bytes;
  }

 private:
  void scalar_attr(hid_t where, const char* name, hid_t mem_type, hid_t file_type,
                   const void* value) {
    Handle space(H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
    Handle a(H5_CHECK(H5Acreate2(where, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT)),
             H5Aclose);
    H5_CHECK(H5Awrite(a.get(), mem_type, value));
  }
  void array(hid_t where, const char* name, hid_t mem_type, hid_t file_type, const void* data,
             size_t n) {
    hsize_t dims[1] = {static_cast<hsize_t>(n)};
    Handle space(H5_CHECK(H5Screate_simple(1, dims, nullptr)), H5Sclose);
    Handle d(H5_CHECK(H5Dcreate2(where, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                 H5P_DEFAULT)),
             H5Dclose);
    if (n > 0) H5_CHECK(H5Dwrite(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
  }

  std::string path_;
  hid_t file_ = -1;
  hid_t string_type_ = -1;
  std::vector<hid_t> groups_;
};

// The serve group: the load as measured (docs/results-format.md, "/serve"). Each level's metric
// is a dataset of one value per level under /serve/levels, so that a reader gets a table.
void write_serve(Writer& w, const ServeResult& s) {
  hid_t serve = w.group("serve");
  w.attr(serve, "mode", s.mode);
  w.attr(serve, "api", s.api);
  w.attr(serve, "base_url", s.base_url);
  w.attr(serve, "model", s.model);
  w.attr(serve, "ready_s", s.ready_s);
  w.attr(serve, "server_stop", s.server_stop);
  hid_t levels = w.group("serve/levels");
  w.dataset(levels, "level", s.levels);
  w.dataset(levels, "searched", s.searched);
  w.dataset(levels, "metric_names", s.metric_names);
  w.dataset(levels, "metric_units", s.metric_units);
  for (size_t m = 0; m < s.metric_names.size() && m < s.level_values.size(); ++m) {
    w.dataset(levels, s.metric_names[m].c_str(), s.level_values[m]);
  }
  hid_t requests = w.group("serve/requests");
  std::vector<std::int64_t> level, prompt_tokens, output_tokens, http_status;
  std::vector<double> send, ttft, e2e, tpot;
  std::vector<std::string> error, message;
  for (const ServeRequest& q : s.requests) {
    level.push_back(q.level);
    send.push_back(q.send_s);
    ttft.push_back(q.ttft_s);
    e2e.push_back(q.e2e_s);
    tpot.push_back(q.tpot_s);
    prompt_tokens.push_back(q.prompt_tokens);
    output_tokens.push_back(q.output_tokens);
    http_status.push_back(q.http_status);
    error.push_back(q.error);
    message.push_back(q.message);
  }
  w.dataset(requests, "level", level);
  w.dataset(requests, "send_s", send);
  w.dataset(requests, "ttft_s", ttft);
  w.dataset(requests, "e2e_s", e2e);
  w.dataset(requests, "tpot_s", tpot);
  w.dataset(requests, "prompt_tokens", prompt_tokens);
  w.dataset(requests, "output_tokens", output_tokens);
  w.dataset(requests, "http_status", http_status);
  w.dataset(requests, "error", error);
  w.dataset(requests, "message", message);
  hid_t chunks = w.group("serve/chunks");
  w.dataset(chunks, "request", s.chunk_request);
  w.dataset(chunks, "time_s", s.chunk_time_s);
  w.dataset(chunks, "tokens", s.chunk_tokens);
}

void write_result(Writer& w, const RankResult& r) {
  hid_t root = w.root();
  w.attr(root, "schema_version", kResultsSchemaVersion);
  w.attr(root, "rank", r.rank);
  w.attr(root, "world_size", r.world_size);
  w.attr(root, "status", r.status);
  // Every other root attribute, from the one list the reader reads too.
  for (const TextAttr& a : kTextAttrs) w.attr(root, a.name, r.*a.field);
  for (const IntAttr& a : kIntAttrs) w.attr(root, a.name, r.*a.field);
  for (const RealAttr& a : kRealAttrs) w.attr(root, a.name, r.*a.field);
  w.steps_table(r.steps);

  hid_t eval = w.group("eval");
  w.attr(eval, "ran", static_cast<std::int64_t>(r.eval.ran));
  for (const auto& a : kEvalIntAttrs) w.attr(eval, a.name, r.eval.*a.field);
  for (const auto& a : kEvalRealAttrs) w.attr(eval, a.name, r.eval.*a.field);
  for (const auto& a : kEvalSeries) w.dataset(eval, a.name, r.eval.*a.field);

  hid_t memory = w.group("memory");
  w.attr(memory, "stage_source", r.memory_stage_source);
  std::vector<std::string> names;
  for (const StageMemory& m : r.memory_stages) names.push_back(m.stage);
  w.dataset(memory, "stage", names);
  auto write_columns = [&](const auto& columns) {
    for (const auto& c : columns) {
      std::vector<std::int64_t> column;
      for (const StageMemory& m : r.memory_stages) column.push_back(m.*c.field);
      w.dataset(memory, c.name, column);
    }
  };
  write_columns(kMemoryColumns);
  write_columns(kMemoryAllocColumns);

  if (r.benchmark == "infer") {
    const InferResult& n = r.infer;
    hid_t infer = w.group("infer");
    w.attr(infer, "batch_size", n.batch_size);
    w.attr(infer, "input_tokens", n.input_tokens);
    w.attr(infer, "output_tokens", n.output_tokens);
    w.attr(infer, "num_beams", n.num_beams);
    w.attr(infer, "warmup_runs", n.warmup_runs);
    w.attr(infer, "runs_planned", n.runs_planned);
    w.attr(infer, "kv_cache", n.kv_cache);
    w.attr(infer, "dtype", n.dtype);
    w.attr(infer, "decoding", n.decoding);
    w.attr(infer, "token_metrics", static_cast<std::int64_t>(n.token_metrics));
    w.attr(infer, "cuda_graph", static_cast<std::int64_t>(n.cuda_graph));
    w.attr(infer, "prefill_flops", n.prefill_flops);
    w.attr(infer, "decode_flops", n.decode_flops);
    w.attr(infer, "decode_bytes", n.decode_bytes);
    w.attr(infer, "weight_bytes", n.weight_bytes);
    w.attr(infer, "kv_cache_bytes", n.kv_cache_bytes);
    w.attr(infer, "peak_bandwidth_gbs", n.peak_bandwidth_gbs);
    w.attr(infer, "peak_bandwidth_source", n.peak_bandwidth_source);
    w.runs_table(infer, n.runs);
    w.token_times_table(infer, n.token_times);
    const auto runs = static_cast<hsize_t>(n.runs.size());
    const auto per_run = static_cast<hsize_t>(n.batch_size * n.output_tokens);
    if (runs * per_run == n.generated_ids.size()) {
      w.dataset(infer, "generated_ids", n.generated_ids,
                {runs, static_cast<hsize_t>(n.batch_size), static_cast<hsize_t>(n.output_tokens)});
    }
  }

  if (r.benchmark == "command" || r.benchmark == "serve") {
    const CommandResult& c = r.command;
    hid_t command = w.group("command");
    w.dataset(command, "argv", c.argv);
    w.attr(command, "workdir", c.workdir);
    w.attr(command, "stdout_log", c.stdout_log);
    w.attr(command, "stderr_log", c.stderr_log);
    w.attr(command, "exit_code", c.exit_code);
    w.attr(command, "term_signal", c.term_signal);
    w.attr(command, "seconds", c.seconds);
    // The metrics as columns of one row each, and every value read as (metric, value) pairs.
    std::vector<std::string> name, unit, source, reduce, problem, type, text;
    std::vector<std::uint8_t> required, found;
    std::vector<double> value, values;
    std::vector<std::int64_t> value_metric;
    for (size_t i = 0; i < c.metrics.size(); ++i) {
      const CommandMetric& m = c.metrics[i];
      name.push_back(m.name);
      unit.push_back(m.unit);
      source.push_back(m.source);
      reduce.push_back(m.reduce);
      problem.push_back(m.problem);
      required.push_back(m.required);
      found.push_back(m.found);
      value.push_back(m.value);
      type.push_back(m.is_text ? "text" : "number");
      text.push_back(m.text);
      for (double v : m.values) {
        values.push_back(v);
        value_metric.push_back(static_cast<std::int64_t>(i));
      }
    }
    w.dataset(command, "metric_name", name);
    w.dataset(command, "metric_unit", unit);
    w.dataset(command, "metric_source", source);
    w.dataset(command, "metric_reduce", reduce);
    w.dataset(command, "metric_required", required);
    w.dataset(command, "metric_found", found);
    w.dataset(command, "metric_value", value);
    w.dataset(command, "metric_problem", problem);
    w.dataset(command, "metric_type", type);
    w.dataset(command, "metric_text", text);
    w.dataset(command, "values", values);
    w.dataset(command, "values_metric", value_metric);
  }
  if (r.benchmark == "serve") write_serve(w, r.serve);

  hid_t samples = w.group("samples");
  w.attr(samples, "device_source", r.samples.device_source);
  for (const auto& a : kSampleRealSeries) w.dataset(samples, a.name, r.samples.*a.field);
  for (const auto& a : kSampleIntSeries) w.dataset(samples, a.name, r.samples.*a.field);
}

}  // namespace

void set_run_environment(RankResult& r, const RunEnvironment& env) {
  r.container_runtime = env.container_runtime;
  r.container_image = env.container_image;
  r.container_digest = env.container_digest;
  r.container_env_kept = env.container_env_kept;
  r.slurm_job_id = env.slurm_job_id;
  r.slurm_array_job_id = env.slurm_array_job_id;
  r.slurm_array_task_id = env.slurm_array_task_id;
  r.slurm_step_id = env.slurm_step_id;
}

void write_summary_file(const std::string& out_dir, const RankResult& r, const std::string& status,
                        const std::string& reason, const Value& extra,
                        const std::vector<Metric>& metrics,
                        const std::map<std::string, Value>& whole) {
  Value root = Value::map();
  root.set("benchmark", Value::string(r.benchmark));
  root.set("status", Value::string(status));
  root.set("reason", Value::string(reason));
  root.set("tag", Value::string(r.tag));
  root.set("config_hash", Value::string(r.config_hash));
  root.set("run_id", Value::string(r.run_id));
  root.set("world_size", Value::integer(r.world_size));
  // Where it ran, for the sweep's performance references keyed by device (sweep/references.h).
  if (!r.device_name.empty()) root.set("device_name", Value::string(r.device_name));
  // What it ran on and with, for the history store (docs/history.md): rank 0's, the fields
  // known.
  Value environment = Value::map();
  for (const auto& [name, text] : std::initializer_list<std::pair<const char*, const std::string*>>{
           {"hostname", &r.hostname},
           {"device", &r.device_type},
           {"device_name", &r.device_name},
           {"torch_version", &r.torch_version},
           {"cuda_version", &r.cuda_version},
           {"nccl_version", &r.nccl_version},
           {"mpi_version", &r.mpi_version},
           {"sweepbench_version", &r.sweepbench_version},
           {"container_runtime", &r.container_runtime},
           {"container_image", &r.container_image},
           {"container_digest", &r.container_digest}}) {
    if (!text->empty()) environment.set(name, Value::string(*text));
  }
  root.set("environment", environment);
  for (const Value::Entry& e : extra.entries()) root.set(e.key, e.value);
  Value values = Value::map();
  Value units = Value::map();
  for (const Metric& m : metrics) {
    if (auto list = whole.find(m.name); list != whole.end()) {
      values.set(m.name, list->second);
    } else {
      values.set(m.name, std::isfinite(m.value) ? Value::real(m.value) : Value::null());
    }
    units.set(m.name, Value::string(m.unit));
  }
  root.set("metrics", values);
  root.set("units", units);
  write_file_atomic((fs::path(out_dir) / kSummaryFile).string(), emit_json(root, 2) + "\n");
}

void write_rank_file(const RankResult& result, const std::string& path) {
  fs::path target(path);
  std::error_code ec;
  if (fs::exists(target, ec)) {
    throw Error(ErrorKind::kConflict, Mark::in(path), "", "a result file is already there",
                "results are never overwritten; write to another directory");
  }
  fs::path partial = target.parent_path() / ("." + target.filename().string() + ".partial");
  fs::remove(partial, ec);  // a partial file can only be left by a run that died while writing
  std::string bytes;
  {
    Writer w(partial.string());  // in memory; the name is only HDF5's label for it
    write_result(w, result);
    bytes = w.image();
  }
  // Every write checked, flushed to the disk, and nothing left behind when one fails.
  int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(
        ErrorKind::kIo, Mark::in(path), "",
        std::string("cannot create ") + partial.filename().string() + ": " + std::strerror(errno));
  }
  if (!write_all(fd, bytes) || ::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    fs::remove(partial, ec);
    throw Error(ErrorKind::kIo, Mark::in(path), "",
                std::string("cannot write the results: ") + std::strerror(err));
  }
  if (::close(fd) != 0) {
    int err = errno;
    fs::remove(partial, ec);
    throw Error(ErrorKind::kIo, Mark::in(path), "",
                std::string("cannot write the results: ") + std::strerror(err));
  }
  // link(2) refuses an existing target atomically, which rename(2) would silently replace.
  if (::link(partial.c_str(), target.c_str()) != 0) {
    int err = errno;
    fs::remove(partial, ec);
    if (err == EEXIST) {
      throw Error(ErrorKind::kConflict, Mark::in(path), "", "a result file appeared while writing",
                  "two runs write to the same directory");
    }
    throw Error(ErrorKind::kIo, Mark::in(path), "",
                std::string("cannot move the finished file into place: ") + std::strerror(err));
  }
  fs::remove(partial, ec);
}

void take_samples(const ResourceSampler& sampler, RankResult& r) {
  r.samples.device_source = sampler.device_source();
  for (const ResourceSample& s : sampler.samples()) {
    r.samples.time_s.push_back(s.time_s);
    r.samples.device_bytes.push_back(s.device_bytes);
    r.samples.rss_bytes.push_back(s.rss_bytes);
    r.samples.cpu_percent.push_back(s.cpu_percent);
    r.samples.ram_used_mb.push_back(s.ram_used_mb);
  }
}

}  // namespace sweepbench
