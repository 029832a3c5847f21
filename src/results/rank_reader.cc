#include "results/rank_reader.h"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/text.h"
#include "results/rank_fields.h"

namespace sweepbench {
namespace {

// An HDF5 id closed on scope exit (negative ids are "none").
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  Id(Id&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  Id& operator=(Id&&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// A numeric column to fill: its name, and where its values go (the pointer's type says which
// values: double, int64 or uint8).
struct Column {
  const char* name;
  std::variant<std::optional<std::vector<double>>*, std::optional<std::vector<std::int64_t>>*,
               std::optional<std::vector<std::uint8_t>>*>
      out;
};

// The native HDF5 type of values of type T.
template <typename T>
hid_t native_type() {
  if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  if constexpr (std::is_same_v<T, std::int64_t>) return H5T_NATIVE_INT64;
  return H5T_NATIVE_UINT8;
}
// The type of the values behind a Column's pointer.
template <typename Out>
using ValueOf = typename std::decay_t<decltype(*std::declval<Out>())>::value_type::value_type;

class Reader {
 public:
  explicit Reader(std::vector<std::string>* problems) : problems_(problems) {}

  void problem(const std::string& where, const std::string& what) {
    problems_->push_back(where + ": " + what);
  }

  // A scalar attribute of `where` (a file or group), or nullopt with a problem.
  std::optional<std::string> text(hid_t where, const std::string& prefix, const char* name) {
    Id a = open_attr(where, prefix, name, H5T_STRING);
    if (!a.ok()) return std::nullopt;
    Id type(H5Aget_type(a.get()), H5Tclose);
    if (H5Tis_variable_str(type.get()) > 0) {
      Id mem = string_type(type.get());
      char* value = nullptr;
      if (H5Aread(a.get(), mem.get(), &value) < 0) {
        problem(prefix + name, "cannot be read");
        return std::nullopt;
      }
      std::string out(value != nullptr ? value : "");
      if (value != nullptr) H5free_memory(value);
      return utf8(prefix, name, std::move(out));
    }
    size_t size = H5Tget_size(type.get());
    std::string out(size, '\0');
    if (size > 0 && H5Aread(a.get(), type.get(), out.data()) < 0) {
      problem(prefix + name, "cannot be read");
      return std::nullopt;
    }
    return utf8(prefix, name, out.substr(0, out.find('\0')));
  }
  // Our files hold UTF-8 text; anything else is damage, and would reach tables raw.
  std::optional<std::string> utf8(const std::string& prefix, const char* name, std::string text) {
    if (find_invalid_utf8(text) == std::string::npos) return text;
    problem(prefix + name, "is not valid UTF-8 text (damaged)");
    return std::nullopt;
  }
  std::optional<std::int64_t> integer(hid_t where, const std::string& prefix, const char* name) {
    Id a = open_attr(where, prefix, name, H5T_INTEGER);
    std::int64_t v = 0;
    if (!a.ok()) return std::nullopt;
    if (H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0) {
      problem(prefix + name, "cannot be read");
      return std::nullopt;
    }
    return v;
  }
  std::optional<double> real(hid_t where, const std::string& prefix, const char* name) {
    Id a = open_attr(where, prefix, name, H5T_FLOAT);
    double v = 0;
    if (!a.ok()) return std::nullopt;
    if (H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v) < 0) {
      problem(prefix + name, "cannot be read");
      return std::nullopt;
    }
    return v;
  }

  // A 1-D numeric dataset converted to T; nullopt with a problem when absent or not numeric.
  template <typename T>
  std::optional<std::vector<T>> numbers(hid_t group, const std::string& prefix, const char* name,
                                        hid_t mem_type) {
    Id d = open_dataset(group, prefix, name);
    if (!d.ok()) return std::nullopt;
    Id type(H5Dget_type(d.get()), H5Tclose);
    H5T_class_t cls = H5Tget_class(type.get());
    if (cls != H5T_INTEGER && cls != H5T_FLOAT) {
      problem(prefix + name, "is not numeric");
      return std::nullopt;
    }
    std::optional<size_t> n = length(d.get(), type.get(), prefix + name);
    if (!n) return std::nullopt;
    std::vector<T> out(*n);
    if (*n > 0 && H5Dread(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) {
      problem(prefix + name, "cannot be read");
      return std::nullopt;
    }
    return out;
  }
  std::optional<std::vector<std::string>> strings(hid_t group, const std::string& prefix,
                                                  const char* name) {
    Id d = open_dataset(group, prefix, name);
    if (!d.ok()) return std::nullopt;
    Id type(H5Dget_type(d.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) <= 0) {
      problem(prefix + name, "is not a list of strings");
      return std::nullopt;
    }
    std::optional<size_t> n = length(d.get(), type.get(), prefix + name);
    if (!n) return std::nullopt;
    std::vector<char*> raw(*n, nullptr);
    Id mem = string_type(type.get());
    // The conversion buffer: HDF5 zeroes 1 MiB by default for a few names. One list for every
    // read, as the file-access list in read_rank_file.
    static const hid_t xfer = [] {
      hid_t p = H5Pcreate(H5P_DATASET_XFER);
      H5Pset_buffer(p, 64 * 1024, nullptr, nullptr);
      return p;
    }();
    if (*n > 0 && H5Dread(d.get(), mem.get(), H5S_ALL, H5S_ALL, xfer, raw.data()) < 0) {
      problem(prefix + name, "cannot be read");
      return std::nullopt;
    }
    std::vector<std::string> out;
    for (char* s : raw) {
      out.emplace_back(s ? s : "");
      if (s) H5free_memory(s);
    }
    return out;
  }

  // Members of a 1-D compound dataset (a table), each converted to its column's type: one open
  // and one read for every column asked for. A column that is absent or not numeric stays
  // nullopt, with a problem.
  void table(hid_t where, const char* name, const std::vector<Column>& columns) {
    const std::string at = name;
    Id d = open_dataset(where, "", name);
    if (!d.ok()) return;
    Id type(H5Dget_type(d.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_COMPOUND) {
      problem(at, "is not a table (a compound dataset)");
      return;
    }
    std::optional<size_t> n = length(d.get(), type.get(), at);
    if (!n) return;
    // Which members are wanted, where they are and what they are.
    struct Wanted {
      const Column* column;
      hid_t native;    // of the column's values
      unsigned index;  // in the file's table
      size_t offset;   // in a row read
    };
    std::vector<Wanted> wanted;
    for (const Column& c : columns) {
      int index = H5Tget_member_index(type.get(), c.name);
      if (index < 0) {
        problem(at + "." + c.name, "is missing");
        continue;
      }
      auto i = static_cast<unsigned>(index);
      H5T_class_t cls = H5Tget_member_class(type.get(), i);
      if (cls != H5T_INTEGER && cls != H5T_FLOAT) {
        problem(at + "." + c.name, "is not numeric");
        continue;
      }
      hid_t native =
          std::visit([](auto* out) { return native_type<ValueOf<decltype(out)>>(); }, c.out);
      wanted.push_back({&c, native, i, H5Tget_member_offset(type.get(), i)});
    }
    if (wanted.empty()) return;
    // A table of numbers only (ours) is read as stored, with no conversion of whole rows (HDF5's
    // compound conversion costs more than the read); each column is converted alone where its
    // type is not the one wanted. Otherwise HDF5 converts the wanted members into a packed row.
    bool plain = true;
    for (int k = 0; plain && k < H5Tget_nmembers(type.get()); ++k) {
      H5T_class_t cls = H5Tget_member_class(type.get(), static_cast<unsigned>(k));
      plain = cls == H5T_INTEGER || cls == H5T_FLOAT;
    }
    size_t width = 0;
    if (plain) {
      width = H5Tget_size(type.get());
    } else {
      for (Wanted& w : wanted) {
        w.offset = width;
        width += H5Tget_size(w.native);
      }
    }
    Id mem(plain ? H5Tcopy(type.get()) : H5Tcreate(H5T_COMPOUND, width), H5Tclose);
    for (const Wanted& w : wanted) {
      if (!plain) H5Tinsert(mem.get(), w.column->name, w.offset, w.native);
    }
    std::vector<unsigned char> rows(*n * width);
    if (*n > 0 && H5Dread(d.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()) < 0) {
      problem(at, "cannot be read");
      return;
    }
    for (const Wanted& w : wanted) {
      size_t size = H5Tget_size(w.native);
      Id stored(plain ? H5Tget_member_type(type.get(), w.index) : H5Tcopy(w.native), H5Tclose);
      size_t stored_size = H5Tget_size(stored.get());
      // The column, gathered, then converted in place (room for the larger of the two sizes).
      std::vector<unsigned char> column(*n * std::max(size, stored_size));
      for (size_t k = 0; k < *n; ++k) {
        std::memcpy(column.data() + k * stored_size, rows.data() + k * width + w.offset,
                    stored_size);
      }
      if (*n > 0 && H5Tequal(stored.get(), w.native) <= 0 &&
          H5Tconvert(stored.get(), w.native, *n, column.data(), nullptr, H5P_DEFAULT) < 0) {
        problem(at + "." + w.column->name, "cannot be read");
        continue;
      }
      std::visit(
          [&](auto* out) {
            using T = ValueOf<decltype(out)>;
            std::vector<T> v(*n);
            if (*n > 0) std::memcpy(v.data(), column.data(), *n * sizeof(T));
            *out = std::move(v);
          },
          w.column->out);
    }
  }

  Id group(hid_t file, const char* name) {
    Id g(H5Gopen2(file, name, H5P_DEFAULT), H5Gclose);
    if (!g.ok())
      problem(name, H5Lexists(file, name, H5P_DEFAULT) <= 0 ? "is missing" : "is not a group");
    return g;
  }

 private:
  // A variable-length string in memory with the file's character set (HDF5 does not convert
  // between ASCII and UTF-8).
  static Id string_type(hid_t file_type) {
    Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(file_type));
    return mem;
  }
  // Opening first and asking why only on failure: each lookup by name costs (docs/performance.md).
  Id open_attr(hid_t where, const std::string& prefix, const char* name, H5T_class_t want) {
    if (where < 0) return Id(-1, H5Aclose);
    Id a(H5Aopen(where, name, H5P_DEFAULT), H5Aclose);
    if (!a.ok()) {
      problem(prefix + name, H5Aexists(where, name) <= 0 ? "is missing" : "cannot be opened");
      return Id(-1, H5Aclose);
    }
    Id type(H5Aget_type(a.get()), H5Tclose);
    Id space(H5Aget_space(a.get()), H5Sclose);
    if (H5Tget_class(type.get()) != want) {
      problem(prefix + name, want == H5T_STRING    ? "is not a string"
                             : want == H5T_INTEGER ? "is not an integer"
                                                   : "is not a number");
      return Id(-1, H5Aclose);
    }
    if (H5Sget_simple_extent_npoints(space.get()) != 1) {
      problem(prefix + name, "is not a single value");
      return Id(-1, H5Aclose);
    }
    return a;
  }
  Id open_dataset(hid_t group, const std::string& prefix, const char* name) {
    if (group < 0) return Id(-1, H5Dclose);
    Id d(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose);
    if (!d.ok()) {
      problem(prefix + name,
              H5Lexists(group, name, H5P_DEFAULT) <= 0 ? "is missing" : "is not a dataset");
    }
    return d;
  }
  std::optional<size_t> length(hid_t dataset, hid_t type, const std::string& where) {
    Id space(H5Dget_space(dataset), H5Sclose);
    if (H5Sget_simple_extent_ndims(space.get()) != 1) {
      problem(where, "is not one-dimensional");
      return std::nullopt;
    }
    hsize_t dims[1] = {0};
    H5Sget_simple_extent_dims(space.get(), dims, nullptr);
    // Our writer stores every value. A length the file has no bytes for (a damaged or foreign
    // file: HDF5 would make up fill values) must not become a vector of that length.
    size_t element = H5Tget_size(type);
    hsize_t stored = H5Dget_storage_size(dataset);
    if (dims[0] > 0 && (element == 0 || stored / element < dims[0])) {
      problem(where, "declares " + std::to_string(dims[0]) + " values and stores " +
                         std::to_string(element == 0 ? 0 : stored / element));
      return std::nullopt;
    }
    return static_cast<size_t>(dims[0]);
  }

  std::vector<std::string>* problems_;
};

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

}  // namespace

RankRead read_rank_file(const std::string& path, RankReadScope scope) {
  RankRead read;
  const bool all = scope == RankReadScope::kAll;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // problems are reported, not printed by HDF5
  // The core driver reads the file whole at open: one read instead of one per object. One
  // property list serves every file (HDF5 ids are per process, like the files bench-extract's
  // reader processes read one at a time).
  static const hid_t fapl = [] {
    hid_t p = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(p, 1 << 20, 0);
    return p;
  }();
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
  if (!file.ok()) {
    // H5Fis_accessible is 1.12+; Debian 12 has 1.10.
    read.problems.push_back(H5Fis_hdf5(path.c_str()) <= 0
                                ? "not an HDF5 file (cut short, or not a result)"
                                : "cannot be opened");
    return read;
  }
  Reader in(&read.problems);
  RankResult r;
  hid_t f = file.get();
  // Identity: without these the file cannot be placed in its run.
  std::optional<std::string> status = in.text(f, "", "status");
  std::optional<std::int64_t> rank = in.integer(f, "", "rank");
  std::optional<std::int64_t> world = in.integer(f, "", "world_size");
  if (status && !known_status(*status)) {
    in.problem("status", "is '" + *status + "', which no sweepbench writes (damaged?)");
    status.reset();
  }
  bool identity = status && rank && world && *world >= 1 && *rank >= 0 && *rank < *world;
  if (status && rank && world && !identity) {
    in.problem("rank", "is " + std::to_string(*rank) + " of world_size " + std::to_string(*world));
  }
  take(status, &r.status);
  take(rank, &r.rank);
  take(world, &r.world_size);
  // What the whole run shares (its config, shapes, FLOPs, evaluation loss) comes from rank 0;
  // in the summary scope the other ranks' files are read for their own measurements only.
  const bool lead = all || (rank && *rank == 0);
  const std::optional<std::int64_t> schema = in.integer(f, "", "schema_version");
  if (schema && *schema > kResultsSchemaVersion) {
    in.problem("schema_version", std::to_string(*schema) + " is newer than this reader's " +
                                     std::to_string(kResultsSchemaVersion));
  }
  // Every other root attribute, from the one list the writer writes too (rank_fields.h).
  auto wanted_here = [&](FieldScope needed_by) {
    return needed_by == FieldScope::kEvery || (needed_by == FieldScope::kLead && lead) || all;
  };
  auto present = [&](const auto& a) { return !a.since_within_schema || H5Aexists(f, a.name) > 0; };
  for (const TextAttr& a : kTextAttrs) {
    if (wanted_here(a.scope) && present(a)) take(in.text(f, "", a.name), &(r.*a.field));
  }
  for (const IntAttr& a : kIntAttrs) {
    if (wanted_here(a.scope) && present(a)) take(in.integer(f, "", a.name), &(r.*a.field));
  }
  for (const RealAttr& a : kRealAttrs) {
    if (wanted_here(a.scope) && present(a)) take(in.real(f, "", a.name), &(r.*a.field));
  }

  // Steps: every column must have one value per step; the columns are rank_fields.h's. Schema 1
  // kept them as one dataset per column in a group; schema 2 as one table.
  constexpr size_t kColumns = std::size(kStepColumns);
  std::optional<std::vector<double>> reals[kColumns];
  std::optional<std::vector<std::int64_t>> ints[kColumns];
  std::optional<std::vector<std::uint8_t>> flags[kColumns];
  std::vector<Column> wanted;
  for (size_t i = 0; i < kColumns; ++i) {
    const StepColumn& c = kStepColumns[i];
    if (!c.summary && !all) continue;
    if (c.real) wanted.push_back({c.name, &reals[i]});
    if (c.integer) wanted.push_back({c.name, &ints[i]});
    if (c.flag) wanted.push_back({c.name, &flags[i]});
  }
  auto column_size = [&](size_t i) -> std::optional<size_t> {
    if (reals[i]) return reals[i]->size();
    if (ints[i]) return ints[i]->size();
    if (flags[i]) return flags[i]->size();
    return std::nullopt;
  };
  auto index_of = [&](std::string_view name) {
    for (size_t i = 0; i < kColumns; ++i) {
      if (name == kStepColumns[i].name) return i;
    }
    return kColumns;
  };
  const size_t step_i = index_of("step"), total_i = index_of("total_s"),
               measured_i = index_of("measured");
  const bool columns = schema && *schema == 1;
  const std::string sp = columns ? "steps/" : "steps.";
  bool steps_found = false;
  if (columns) {
    if (Id g = in.group(f, "steps"); g.ok()) {
      steps_found = true;
      for (const Column& c : wanted) {
        std::visit(
            [&](auto* out) {
              using T = ValueOf<decltype(out)>;
              *out = in.numbers<T>(g.get(), sp, c.name, native_type<T>());
            },
            c.out);
      }
    }
  } else {
    steps_found = true;
    in.table(f, "steps", wanted);
  }
  bool steps_ok = false;
  if (steps_found && (ints[step_i] || !all) && reals[total_i] && flags[measured_i]) {
    const size_t n = reals[total_i]->size();
    steps_ok = true;
    for (size_t i = 0; i < kColumns; ++i) {
      std::optional<size_t> size = column_size(i);
      if (size && *size != n) {
        in.problem(sp + kStepColumns[i].name,
                   std::to_string(*size) + " values for " + std::to_string(n) + " steps");
        steps_ok = false;
      }
    }
    if (steps_ok) {
      r.steps.resize(n);
      for (size_t k = 0; k < n; ++k) {
        StepRecord& s = r.steps[k];
        s.step = static_cast<std::int64_t>(k);  // unless the file says (a summary read)
        for (size_t i = 0; i < kColumns; ++i) {
          const StepColumn& c = kStepColumns[i];
          if (reals[i]) s.*c.real = (*reals[i])[k];
          if (ints[i]) s.*c.integer = (*ints[i])[k];
          if (flags[i]) s.*c.flag = (*flags[i])[k] != 0;
        }
      }
    }
  }

  if (Id g = in.group(f, "eval"); g.ok()) {
    const std::string p = "eval/";
    if (lead) {
      if (auto ran = in.integer(g.get(), p, "ran")) r.eval.ran = *ran != 0;
    }
    for (const auto& a : kEvalIntAttrs) {
      if (wanted_here(a.scope)) take(in.integer(g.get(), p, a.name), &(r.eval.*a.field));
    }
    for (const auto& a : kEvalRealAttrs) {
      if (wanted_here(a.scope)) take(in.real(g.get(), p, a.name), &(r.eval.*a.field));
    }
    for (const auto& a : kEvalSeries) {
      if (wanted_here(a.scope)) {
        take(in.numbers<double>(g.get(), p, a.name, H5T_NATIVE_DOUBLE), &(r.eval.*a.field));
      }
    }
  }

  if (Id g = in.group(f, "memory"); g.ok()) {
    // Other ranks' stages matter for their peaks only (mem_peak_bytes): no names, the columns of
    // kMemoryColumns their scope asks for.
    const std::string p = "memory/";
    std::optional<std::vector<std::string>> names;
    if (lead) {
      take(in.text(g.get(), p, "stage_source"), &r.memory_stage_source);
      names = in.strings(g.get(), p, "stage");
    }
    std::vector<std::optional<std::vector<std::int64_t>>> bytes;
    bool complete = !lead || names.has_value();
    for (const auto& c : kMemoryColumns) {
      if (wanted_here(c.scope)) {
        bytes.push_back(in.numbers<std::int64_t>(g.get(), p, c.name, H5T_NATIVE_INT64));
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
    if (complete && !same_length) {
      in.problem("memory", "its columns have different lengths");
    } else if (complete) {
      // The counted columns are optional (older files); one of another length is a problem.
      std::vector<std::optional<std::vector<std::int64_t>>> counted;
      for (const auto& c : kMemoryAllocColumns) {
        counted.emplace_back();
        if (!wanted_here(c.scope) || H5Lexists(g.get(), c.name, H5P_DEFAULT) <= 0) continue;
        counted.back() = in.numbers<std::int64_t>(g.get(), p, c.name, H5T_NATIVE_INT64);
        if (counted.back() && counted.back()->size() != stages) {
          in.problem("memory", std::string(c.name) + " has another length than the stages");
          counted.back().reset();
        }
      }
      for (size_t k = 0; k < stages; ++k) {
        StageMemory m;
        if (names) m.stage = (*names)[k];
        for (size_t i = 0; i < bytes.size(); ++i) {
          if (bytes[i]) m.*kMemoryColumns[i].field = (*bytes[i])[k];
        }
        for (size_t i = 0; i < counted.size(); ++i) {
          if (counted[i]) m.*kMemoryAllocColumns[i].field = (*counted[i])[k];
        }
        r.memory_stages.push_back(m);
      }
    }
  }

  if (Id g = in.group(f, "samples"); g.ok()) {
    const std::string p = "samples/";
    take(in.text(g.get(), p, "device_source"), &r.samples.device_source);
    SampleSeries& m = r.samples;
    for (const auto& a : kSampleRealSeries) {
      if (wanted_here(a.scope)) {
        take(in.numbers<double>(g.get(), p, a.name, H5T_NATIVE_DOUBLE), &(m.*a.field));
      }
    }
    for (const auto& a : kSampleIntSeries) {
      // Device memory counts only where NVML measured it (mem_nvidia_mem_reserved).
      const bool nvml_only = a.field == &SampleSeries::device_bytes && m.device_source != "nvml";
      if (wanted_here(a.scope) && (all || !nvml_only)) {
        take(in.numbers<std::int64_t>(g.get(), p, a.name, H5T_NATIVE_INT64), &(m.*a.field));
      }
    }
  }
  if (r.benchmark == "infer") {
    if (Id g = in.group(f, "infer"); g.ok()) read_infer(in, g.get(), lead, r.infer);
  }
  if (r.benchmark == "command" || r.benchmark == "serve") {
    if (Id g = in.group(f, "command"); g.ok()) read_command(in, g.get(), all, r.command);
  }
  if (r.benchmark == "serve") {
    if (Id g = in.group(f, "serve"); g.ok()) read_serve(in, g.get(), r.serve);
  }
  if (lead && !all) {
    // Where and when, for tables' and figures' titles (bench-extract's device_name and
    // started): read last, and a problem with them is no problem of the file's, so that what
    // the row's numbers need is read exactly as before.
    std::vector<std::string> ignored;
    Reader extra(&ignored);
    for (const auto& [name, field] : {std::pair{"device_name", &RankResult::device_name},
                                      std::pair{"start_time", &RankResult::start_time}}) {
      if (H5Aexists(f, name) <= 0) continue;
      if (std::optional<std::string> v = extra.text(f, "", name)) r.*field = std::move(*v);
    }
  }
  if (identity && steps_ok) read.result = std::move(r);
  return read;
}

}  // namespace sweepbench
