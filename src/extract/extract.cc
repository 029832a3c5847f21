#include "extract/extract.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/fs.h"
#include "core/schema.h"
#include "core/text.h"
#include "core/yaml_io.h"
#include "extract/tool_main.h"
#include "results/rank_reader.h"
#include "results/summary.h"
#include "run/point_state.h"
#include "sweep/expand.h"
#include "sweep/plan_output.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

const std::vector<std::string>& identity_columns() {
  static const std::vector<std::string> c = {"sweep",  "tag",    "index", "scenario",
                                             "repeat", "status", "reason"};
  return c;
}

// The metric columns in the order summarize() gives them, whether or not a point has them.
const std::vector<std::string>& metric_columns() {
  static const std::vector<std::string> c = [] {
    SummaryInput in;
    in.step_s = {1};
    in.has_eval = true;
    in.peak_tflops = 1;
    in.memory_peak_bytes = 0;
    std::vector<std::string> names;
    for (const Metric& m : summarize(in)) names.push_back(m.name);
    return names;
  }();
  return c;
}

bool is_point_dir(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "config.yaml", ec) || fs::exists(dir / "status.json", ec)) return true;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (starts_with(name, "rank-") && ends_with(name, ".h5")) return true;
  }
  return false;
}

std::optional<Value> read_json_or_yaml(const fs::path& path, std::vector<std::string>* warnings) {
  try {
    if (auto text = read_file_if_exists(path.string())) return parse_yaml(*text, path.string());
  } catch (const Error& e) {
    warnings->push_back(path.string() + ": cannot be read: " + e.message());
  }
  return std::nullopt;
}

// What the manifest beside a point says about it (index, scenario, repeat, sweep).
class Manifests {
 public:
  explicit Manifests(std::vector<std::string>* warnings) : warnings_(warnings) {}
  const Value* entry(const fs::path& point_dir, std::string* sweep) {
    fs::path parent = point_dir.parent_path();
    auto it = cache_.find(parent.string());
    if (it == cache_.end()) {
      std::optional<Value> m = read_json_or_yaml(parent / "manifest.json", warnings_);
      it = cache_.emplace(parent.string(), m.value_or(Value())).first;
    }
    const Value& manifest = it->second;
    *sweep = text_field(manifest, "sweep");
    const Value* points = manifest.is_map() ? manifest.find("points") : nullptr;
    if (points == nullptr || !points->is_list()) return nullptr;
    std::string tag = point_dir.filename().string();
    for (const Value& e : points->items()) {
      if (text_field(e, "tag") == tag) return &e;
    }
    return nullptr;
  }

 private:
  std::vector<std::string>* warnings_;
  std::map<std::string, Value> cache_;
};

Value number_or_null(double v) { return std::isfinite(v) ? Value::real(v) : Value::null(); }

const char* const kMemoryColumns[] = {"mem_torch_mem_alloc_in_bytes",
                                      "mem_peak_torch_mem_alloc_in_bytes",
                                      "mem_nvidia_mem_reserved", "cpu_percent_mean", "ram_peak_mb"};

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
  if (before != nullptr && stage.count("init") != 0 && stage.count("train") != 0) {
    auto alloc = [](const StageMemory* m) { return static_cast<double>(m->end - m->begin); };
    auto peaked = [](const StageMemory* m) {
      return static_cast<double>(std::max<std::int64_t>(0, m->peak - m->end));
    };
    double base = static_cast<double>(before->end);
    const StageMemory* init = stage["init"];
    const StageMemory* train = stage["train"];
    (*row)["mem_torch_mem_alloc_in_bytes"] = Value::real(base + alloc(init) + alloc(train));
    (*row)["mem_peak_torch_mem_alloc_in_bytes"] =
        Value::real(base + alloc(init) + peaked(init) + alloc(train) + peaked(train));
  }
  std::vector<double> reserved, cpu;
  double ram_peak = -1;
  for (const RankResult& r : ranks) {
    const std::vector<std::int64_t>& dev = r.samples.device_bytes;
    if (r.samples.device_source == "nvml" && !dev.empty()) {
      reserved.push_back(
          static_cast<double>(*std::max_element(dev.begin(), dev.end()) - dev.front()));
    }
    cpu.insert(cpu.end(), r.samples.cpu_percent.begin(), r.samples.cpu_percent.end());
    for (double mb : r.samples.ram_used_mb) ram_peak = std::max(ram_peak, mb);
  }
  if (!reserved.empty()) (*row)["mem_nvidia_mem_reserved"] = Value::real(mean(reserved));
  if (!cpu.empty()) (*row)["cpu_percent_mean"] = Value::real(mean(cpu));
  if (ram_peak >= 0) (*row)["ram_peak_mb"] = Value::real(ram_peak);
}

std::string cell_text(const Value& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.as_string();
  if (v.is_number() && !v.is_int()) return format_float_repr(v.as_float());
  return display_value(v);
}

}  // namespace

std::vector<std::string> find_point_dirs(const std::vector<std::string>& paths) {
  std::set<std::string> found;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      throw Error::input(Mark::in(p), "", "is not a directory", "give a results directory");
    }
    if (is_point_dir(p)) found.insert(fs::absolute(p).lexically_normal().string());
    for (auto it = fs::recursive_directory_iterator(p, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (!it->is_directory(ec)) continue;
      std::string name = it->path().filename().string();
      if (name == "attempts" || name == "logs" || name == "submit" || starts_with(name, ".")) {
        it.disable_recursion_pending();  // history, logs and scripts: not points
        continue;
      }
      if (is_point_dir(it->path())) {
        found.insert(fs::absolute(it->path()).lexically_normal().string());
      }
    }
  }
  return {found.begin(), found.end()};
}

ExtractTable extract_points(const std::vector<std::string>& point_dirs, double price_per_hour) {
  ExtractTable t;
  t.columns = identity_columns();
  for (const KeySpec& k : Schema::get().keys()) t.columns.push_back(k.path);
  t.columns.insert(t.columns.end(), {"world_size", "device"});
  for (const std::string& m : metric_columns()) t.columns.push_back(m);
  for (const char* m : kMemoryColumns) t.columns.push_back(m);
  t.columns.push_back("cost_usd_per_mtok");
  Manifests manifests(&t.warnings);
  for (const std::string& d : point_dirs) {
    fs::path dir(d);
    std::map<std::string, Value> row;
    std::string sweep;
    row["tag"] = Value::string(dir.filename().string());
    if (const Value* e = manifests.entry(dir, &sweep)) {
      for (const char* key : {"index", "scenario", "repeat"}) {
        if (const Value* v = e->find(key)) row[key] = *v;
      }
    }
    if (!sweep.empty()) row["sweep"] = Value::string(sweep);
    std::optional<Value> record = read_json_or_yaml(dir / "status.json", &t.warnings);

    // Every rank's file, read and checked.
    std::vector<RankResult> ranks;
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::string name = e.path().filename().string();
      if (starts_with(name, "rank-") && ends_with(name, ".h5")) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    std::string incomplete;
    for (const fs::path& f : files) {
      RankRead read = read_rank_file(f.string());
      for (const std::string& p : read.problems) t.warnings.push_back(f.string() + ": " + p);
      if (read.result) {
        ranks.push_back(std::move(*read.result));
      } else {
        incomplete = f.filename().string() + " cannot be read";
      }
    }
    if (incomplete.empty() && !ranks.empty() &&
        static_cast<std::int64_t>(ranks.size()) != ranks.front().world_size) {
      incomplete = std::to_string(ranks.size()) + " rank files for world_size " +
                   std::to_string(ranks.front().world_size);
    }

    // The config: the point's config.yaml, else the one the rank files carry.
    std::optional<Value> config = read_json_or_yaml(dir / "config.yaml", &t.warnings);
    if (!config && !ranks.empty()) {
      try {
        config = parse_yaml(ranks.front().config_yaml, (dir / files.front()).string());
      } catch (const Error&) {
      }
    }
    if (config) {
      for (const KeySpec& k : Schema::get().keys()) {
        if (const Value* v = config->find_path(k.path)) row[k.path] = *v;
      }
    }

    // Status: the runner's record first (it knows about kills and pruning), else the ranks'.
    std::string status = record ? text_field(*record, "status") : "";
    std::string reason = record ? text_field(*record, "reason") : "";
    if (status.empty() && !ranks.empty()) {
      status = ranks.front().status;
      reason = ranks.front().reason;
    }
    if (!incomplete.empty() && (status.empty() || status == "ok")) {
      status = "incomplete";
      reason = incomplete;
    }
    if (status.empty()) {
      status = files.empty() ? "pending" : "incomplete";
    }
    // A run that never finished: its runner recorded `running`, and nobody holds the point now.
    if (status == "running" && files.empty()) {
      std::optional<ClaimHolder> holder = PointClaim::holder_of(d);
      if (!holder || PointClaim::holder_is_dead(*holder)) {
        status = "incomplete";
        reason = "no results: its run was killed or never finished";
      }
    }
    if (status == "incomplete") ++t.incomplete;
    row["status"] = Value::string(status);
    row["reason"] = Value::string(reason);

    if (!ranks.empty() && incomplete.empty()) {
      row["world_size"] = Value::integer(ranks.front().world_size);
      row["device"] = Value::string(ranks.front().device_type);
      double mt_per_hour = 0;
      for (const Metric& m : summarize(summary_input_from_ranks(ranks))) {
        row[m.name] = number_or_null(m.value);
        if (m.name == "mt_per_hour") mt_per_hour = m.value;
      }
      memory_columns(ranks, &row);
      double price = price_per_hour;
      if (auto it = row.find("hardware.price_per_hour");
          it != row.end() && it->second.is_number()) {
        price = it->second.as_float();
      }
      if (price >= 0 && mt_per_hour > 0) {
        row["cost_usd_per_mtok"] =
            Value::real(price * static_cast<double>(ranks.front().world_size) / mt_per_hour);
      }
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

void group_repeats(ExtractTable* t) {
  std::set<std::string> metrics(metric_columns().begin(), metric_columns().end());
  metrics.insert(std::begin(kMemoryColumns), std::end(kMemoryColumns));
  metrics.insert("cost_usd_per_mtok");
  std::set<std::string> not_key = {"tag", "index", "repeat", "status", "reason"};
  not_key.insert(metrics.begin(), metrics.end());
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> group_of;
  for (size_t i = 0; i < t->rows.size(); ++i) {
    std::string key;
    for (const std::string& c : t->columns) {
      if (not_key.count(c) != 0) continue;
      auto it = t->rows[i].find(c);
      key += c + "=" + (it == t->rows[i].end() ? "" : cell_text(it->second)) + "\n";
    }
    auto [it, fresh] = group_of.emplace(key, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  std::vector<std::map<std::string, Value>> rows;
  for (const std::vector<size_t>& g : groups) {
    std::map<std::string, Value> row = t->rows[g.front()];
    std::vector<size_t> ok;
    for (size_t i : g) {
      if (cell_text(t->rows[i]["status"]) == "ok") ok.push_back(i);
    }
    row["repeats"] = Value::integer(static_cast<std::int64_t>(g.size()));
    if (ok.size() != g.size()) {
      for (size_t i : g) {
        if (cell_text(t->rows[i]["status"]) != "ok") {
          row["status"] = t->rows[i]["status"];
          row["reason"] =
              Value::string(std::to_string(ok.size()) + " of " + std::to_string(g.size()) +
                            " repeats ok; " + cell_text(t->rows[i]["reason"]));
          break;
        }
      }
    }
    for (const std::string& m : metrics) {
      std::vector<double> values;
      for (size_t i : ok) {
        auto it = t->rows[i].find(m);
        if (it != t->rows[i].end() && it->second.is_number())
          values.push_back(it->second.as_float());
      }
      row.erase(m);
      if (!values.empty()) {
        row[m] = Value::real(mean(values));
        row[m + "_std"] = Value::real(stddev(values));
      }
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::string> columns;
  for (const std::string& c : t->columns) {
    if (c == "repeat") {
      columns.push_back("repeats");
    } else {
      columns.push_back(c);
      if (metrics.count(c) != 0) columns.push_back(c + "_std");
    }
  }
  t->columns = columns;
  t->rows = rows;
}

void drop_constant_columns(ExtractTable* t, const std::vector<std::string>& keep) {
  std::vector<std::string> kept;
  for (const std::string& c : t->columns) {
    bool always =
        c == "tag" || c == "status" || std::find(keep.begin(), keep.end(), c) != keep.end();
    std::set<std::string> values;
    for (const auto& row : t->rows) {
      auto it = row.find(c);
      values.insert(it == row.end() ? "" : cell_text(it->second));
      if (values.size() > 1) break;
    }
    if (always || values.size() > 1) kept.push_back(c);
  }
  t->columns = kept;
}

ExtractFormat parse_extract_format(const std::string& name) {
  if (name == "csv") return ExtractFormat::kCsv;
  if (name == "json") return ExtractFormat::kJson;
  if (name == "jsonl") return ExtractFormat::kJsonl;
  if (name == "md") return ExtractFormat::kMarkdown;
  throw Error::input(Mark::in("--format " + name), "", "unknown format '" + name + "'",
                     "use csv, json, jsonl or md");
}

ExtractFormat extract_format_of_path(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (ext.size() > 1) {
    try {
      return parse_extract_format(ext.substr(1));
    } catch (const Error&) {
    }
  }
  throw Error::input(Mark::in(path), "", "cannot tell the format from the extension '" + ext + "'",
                     "name the file .csv, .json, .jsonl or .md, or give --format");
}

void print_table(const ExtractTable& t, ExtractFormat format, std::ostream& out) {
  auto cell = [](const std::map<std::string, Value>& row, const std::string& c) {
    auto it = row.find(c);
    return it == row.end() ? Value::null() : it->second;
  };
  switch (format) {
    case ExtractFormat::kCsv: {
      for (size_t i = 0; i < t.columns.size(); ++i) {
        out << (i ? "," : "") << csv_field(t.columns[i]);
      }
      out << "\n";
      for (const auto& row : t.rows) {
        for (size_t i = 0; i < t.columns.size(); ++i) {
          out << (i ? "," : "") << csv_field(cell_text(cell(row, t.columns[i])));
        }
        out << "\n";
      }
      return;
    }
    case ExtractFormat::kJson:
    case ExtractFormat::kJsonl: {
      Value list = Value::list();
      for (const auto& row : t.rows) {
        Value obj = Value::map();
        for (const std::string& c : t.columns) obj.set(c, cell(row, c));
        if (format == ExtractFormat::kJsonl) {
          out << emit_json(obj, -1) << "\n";  // one line per point
        } else {
          list.items().push_back(obj);
        }
      }
      if (format == ExtractFormat::kJson) out << emit_json(list, 2) << "\n";
      return;
    }
    case ExtractFormat::kMarkdown: {
      auto md = [](std::string s) {
        std::string o;
        for (char ch : s) {
          if (ch == '|')
            o += "\\|";
          else if (ch == '\n')
            o += ' ';
          else
            o += ch;
        }
        return o;
      };
      out << "|";
      for (const std::string& c : t.columns) out << " " << md(c) << " |";
      out << "\n|";
      for (size_t i = 0; i < t.columns.size(); ++i) out << "---|";
      out << "\n";
      for (const auto& row : t.rows) {
        out << "|";
        for (const std::string& c : t.columns) out << " " << md(cell_text(cell(row, c))) << " |";
        out << "\n";
      }
      return;
    }
  }
}

namespace {

const char* const kUsage = R"(bench-extract: results trees to one table, one row per point.
Usage: bench-extract -i PATH [PATH...] [-o OUT] [-f] [--format csv|json|jsonl|md]
                     [--drop-constant] [--keep COL]... [--group-repeats]
                     [--price-per-hour X] [--strict]
Searches each PATH for point directories (a config.yaml, status.json or rank-NNNNN.h5 files;
attempts/ is history and left out) and prints one row per point: sweep, tag, index, scenario,
repeat, status, reason, every config key as a dotted column, world_size, device, then the
metrics of docs/metrics.md computed from every rank's file (the slowest rank's step times,
warm-up left out). Points that failed, ran out of memory or timed out are rows with their status
and reason; a rank file that cannot be read gives a warning naming it and a row with status
incomplete. --group-repeats gives one row per point over its repeats (mean, and a _std column
per metric); --price-per-hour (USD per device-hour, unless the point's hardware.price_per_hour
says) fills cost_usd_per_mtok.
Output: -o OUT (format from its extension unless --format; an existing file is refused unless
-f; written whole or not at all), else standard output (CSV unless --format).
Examples:
  bench-extract -i runs/quickstart -o runs/quickstart.csv
  bench-extract -i runs/a runs/b --format md --drop-constant --keep train.micro_batch
Docs: docs/extract.md. Exit codes: 0 (also with incomplete points, unless --strict: then 1),
2 bad input, 3 the output exists (use -f), 4 file-system error.
Options:
)";

}  // namespace

int bench_extract_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc;
  desc.add_options()("help,h", "Show this help")(
      "input,i", po::value<std::vector<std::string>>()->multitoken()->composing(),
      "Results directories (searched recursively)")("output,o", po::value<std::string>(),
                                                    "The output file; standard output if absent")(
      "force,f", "Replace an existing output file")(
      "format", po::value<std::string>(), "csv, json, jsonl or md (default: from -o, else csv)")(
      "drop-constant", "Leave out columns with one value in every row")(
      "keep", po::value<std::vector<std::string>>()->composing(),
      "Keep this column even with --drop-constant (repeatable)")(
      "strict", "Exit 1 when a point is incomplete")(
      "group-repeats", "One row per point over its repeats: mean and _std columns")(
      "price-per-hour", po::value<double>(),
      "USD per device-hour for cost_usd_per_mtok (hardware.price_per_hour wins)");
  return run_tool(
      "bench-extract", args, desc, kUsage, out, err, [&](const po::variables_map& vm) -> int {
        if (!vm.count("input")) {
          err << "bench-extract: error: no input given\nusage: bench-extract -i PATH [-o OUT]  "
                 "(bench-extract --help)\n";
          return 2;
        }
        std::optional<std::string> output;
        if (vm.count("output")) output = vm["output"].as<std::string>();
        ExtractFormat format = vm.count("format")
                                   ? parse_extract_format(vm["format"].as<std::string>())
                               : output ? extract_format_of_path(*output)
                                        : ExtractFormat::kCsv;
        if (output && !vm.count("force") && fs::exists(*output)) {
          throw Error(ErrorKind::kConflict, Mark::in(*output), "", "the output file exists",
                      "add -f to replace it, or choose another -o");
        }
        double price = vm.count("price-per-hour") ? vm["price-per-hour"].as<double>() : -1;
        if (vm.count("price-per-hour") && !(price >= 0)) {
          throw Error::input(Mark::in("--price-per-hour"), "", "must be 0 or more");
        }
        ExtractTable table =
            extract_points(find_point_dirs(vm["input"].as<std::vector<std::string>>()), price);
        for (const std::string& w : table.warnings) err << "bench-extract: warning: " << w << "\n";
        if (vm.count("group-repeats")) group_repeats(&table);
        if (vm.count("drop-constant")) {
          drop_constant_columns(&table, vm.count("keep") ? vm["keep"].as<std::vector<std::string>>()
                                                         : std::vector<std::string>{});
        }
        std::ostringstream text;
        print_table(table, format, text);
        if (output) {
          write_file_atomic(*output, text.str());
          err << "bench-extract: " << plural(table.rows.size(), "point") << " written to "
              << *output
              << (table.incomplete ? " (" + std::to_string(table.incomplete) + " incomplete)" : "")
              << "\n";
        } else {
          out << text.str();
        }
        return vm.count("strict") && table.incomplete > 0 ? 1 : 0;
      });
}

}  // namespace sweepbench
