#include "sweep/plan_output.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "config/config.h"
#include "config/json_text.h"
#include "config/table.h"
#include "config/yaml_io.h"
#include "layout/paths.h"
#include "os/fs.h"
#include "predict/memory_model.h"
#include "sweep/time_estimate.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kManifestSchemaVersion = 1;

// The columns every printer shares: index, tag, scenario and repeat when they tell points
// apart, then the varying keys and the derived keys that vary with them.
// A varying key's value: a key, or an entry of a map key (params.x, launch.env.X), absent: null.
const Value& varying_value(const Value& config, const std::string& key) {
  static const Value none;
  const Value* v = config.find_path(key);
  return v != nullptr ? *v : none;
}

struct Columns {
  bool show_scenario = false, show_repeat = false;
  std::vector<std::string> keys;
  std::vector<std::string> header;

  explicit Columns(const PlanInfo& plan) {
    show_scenario = plan.named_scenarios;
    show_repeat = plan.repeats > 1;
    header = {"index", "tag"};
    if (show_scenario) header.push_back("scenario");
    if (show_repeat) header.push_back("repeat");
    keys = plan.varying_keys;
    keys.insert(keys.end(), plan.derived_varying_keys.begin(), plan.derived_varying_keys.end());
    header.insert(header.end(), keys.begin(), keys.end());
  }

  // `people`: the aligned table (wide values cut), else CSV (exact).
  void row(const SweepPoint& p, std::vector<Value>* out, bool people = true) const {
    out->clear();
    out->push_back(Value::integer(static_cast<std::int64_t>(p.index)));
    out->push_back(Value::string(p.tag));
    if (show_scenario) out->push_back(Value::string(p.scenario));
    if (show_repeat) out->push_back(Value::integer(p.repeat));
    // Config values as the plan shows them everywhere (quoted when they would read back as
    // another type), never rounded: they are what runs. A list or map (an argv) is cut in the
    // middle past config/table.h's width for people: --format csv has it whole.
    for (const std::string& k : keys) {
      const Value& v = varying_value(p.config, k);
      std::string text = display_value(v);
      if (people && (v.is_list() || v.is_map()))
        text = abbreviate_middle(text, kMaxPeopleListWidth);
      out->push_back(Value::string(text));
    }
  }
};
;

Value varying_values(const PlanInfo& plan, const SweepPoint& p) {
  Value v = Value::map();
  for (const std::string& k : plan.varying_keys) v.set(k, varying_value(p.config, k));
  return v;
}

// An aligned table: one pass for the column widths, one to print, holding one row at a time.
void print_table(const Plan& plan, std::ostream& out) {
  const PlanInfo& info = plan.info();
  Columns columns(info);
  TableWidths widths(columns.header);
  std::vector<Value> row;
  plan.for_each_point(
      [&](const SweepPoint& p) {
        columns.row(p, &row);
        widths.add(row);
      },
      true);
  out << "# sweep " << info.sweep_name << " (" << info.sweep_path << ")\n";
  TableWriter table(columns.header, TableFormat::kText, out, TableOptions{false, widths.widths()});
  plan.for_each_point(
      [&](const SweepPoint& p) {
        columns.row(p, &row);
        table.row(row);
      },
      true);
  table.finish();
  out << "# " << plural(info.selected_points, "point");
  if (info.selected_points != info.total_points) out << " selected of " << info.total_points;
  out << "\n";
}

void print_csv(const Plan& plan, std::ostream& out) {
  Columns columns(plan.info());
  std::vector<std::string> header = columns.header;
  header.insert(header.begin() + 2, "config_hash");
  TableWriter table(header, TableFormat::kCsv, out);
  std::vector<Value> row;
  plan.for_each_point(
      [&](const SweepPoint& p) {
        columns.row(p, &row, false);
        row.insert(row.begin() + 2, Value::string(p.config_hash));
        table.row(row);
      },
      true);
  table.finish();
}

// The document emit_json(root, 2) would give, written one point at a time.
void print_json(const Plan& plan, std::ostream& out) {
  const PlanInfo& info = plan.info();
  Value head = Value::map();
  head.set("sweep", Value::string(info.sweep_name));
  head.set("sweep_file", Value::string(info.sweep_path));
  head.set("total_points", Value::integer(static_cast<std::int64_t>(info.total_points)));
  Value keys = Value::list();
  for (const std::string& k : info.varying_keys) keys.items().push_back(Value::string(k));
  head.set("varying_keys", keys);
  std::string text = emit_json(head, 2, false);
  text.pop_back();  // the closing brace: the points follow
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (info.selected_points == 0) {
    out << text << ",\n  \"points\": []\n}\n";
    return;
  }
  out << text << ",\n  \"points\": [";
  bool first = true;
  std::string chunk;
  // Each point's entry is made once and its values replaced in place; both it and the config
  // are written by writers that keep the text of what did not change (config/json_text.h).
  Value e = Value::map();
  for (const char* key : {"index", "scenario", "repeat", "tag", "config_hash"}) {
    e.set(key, Value::null());
  }
  Value& varying = e.set("varying", Value::map());
  for (const std::string& k : info.varying_keys) varying.set(k, Value::null());
  std::vector<Value::Entry>& slots = e.entries();
  JsonMapText entry_text(2, 2), config_text(2, 3);
  plan.for_each_point(
      [&](const SweepPoint& p) {
        slots[0].value = Value::integer(static_cast<std::int64_t>(p.index));
        slots[1].value = Value::string(p.scenario);
        slots[2].value = Value::integer(p.repeat);
        slots[3].value = Value::string(p.tag);
        slots[4].value = Value::string(p.config_hash);
        for (Value::Entry& v : varying.entries()) v.value = varying_value(p.config, v.key);
        // Written at its depth in the document; the config spliced in as its own text.
        chunk.assign(first ? "\n    " : ",\n    ");
        first = false;
        entry_text.append(e, chunk);
        chunk.resize(chunk.size() - 6);  // "\n    }"
        chunk += ",\n      \"config\": ";
        config_text.append(p.config, chunk);
        chunk += "\n    }";
        out << chunk;
      },
      true);
  out << "\n  ]\n}\n";
}

std::string hash_in_header(const std::string& text) {
  const std::string marker = "config_hash: ";
  size_t at = text.find(marker);
  if (at > 200) return "";  // it is in the first line, if anywhere (npos is larger too)
  std::string hex = text.substr(at + marker.size(), 64);
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) return "";
  return hex;
}

// The config_hash of an existing config.yaml: from its header, else by resolving it.
std::string existing_hash(const std::string& path, const std::string& text) {
  std::string hex = hash_in_header(text);
  if (!hex.empty()) return hex;
  try {
    return config_hash(resolve_config(normalize_partial_config(parse_yaml(text, path))));
  } catch (const Error&) {
    return "";
  }
}

Error conflict(const std::string& path, const std::string& message, const std::string& hint) {
  return Error(ErrorKind::kConflict, Mark::in(path), "", message, hint);
}

}  // namespace

PlanFormat parse_plan_format(const std::string& name) {
  if (name == "table") return PlanFormat::kTable;
  if (name == "json") return PlanFormat::kJson;
  if (name == "csv") return PlanFormat::kCsv;
  throw Error::input(Mark::in("--format " + name), "", "unknown format '" + name + "'",
                     "use table, json or csv");
}

namespace {

// The terms a prediction can have, in the order of the estimate's columns.
const std::vector<std::string>& estimate_terms() {
  static const std::vector<std::string> t = {
      "model_states", "buckets",   "weight_copies", "activations", "head",   "recompute",
      "gathered",     "gradients", "weights",       "kv_cache",    "prefill"};
  return t;
}

// Sizes in the table: binary units, each the one its number asks for ("246 MiB", "1.24 GiB").
std::string gib(double bytes) { return byte_size(bytes, true); }

struct Estimate {
  bool known = false;
  bool gpu = false;
  MemoryPrediction memory;
  TimePrediction time;  // time.known: a rate was found
};

Estimate estimate_of(const SweepPoint& p, const TimeCalibration& calibration) {
  Estimate e;
  e.known = predict_point_memory(p.config, &e.memory);
  e.gpu = point_runs_on_gpu(p.config);
  if (predict_point_time(p.config, &e.time) && e.time.known) {
    calibration.apply(p.config, &e.time);
  }
  return e;
}

// The time columns of the CSV (and the JSON's "time" members without the prefix).
const std::vector<std::string>& time_columns() {
  static const std::vector<std::string> c = {
      "step_s",  "compute_s",         "optimizer_s", "overhead_s",   "comm_s",   "flops",
      "comm_bytes", "tokens_per_second", "run_s",    "startup_s",    "device_hours", "cost_usd",
      "calibration"};
  return c;
}

std::vector<Value> time_values(const TimePrediction& t) {
  if (!t.known) return std::vector<Value>(time_columns().size(), Value::null());
  return {Value::real(t.step_s),       Value::real(t.compute_s),
          Value::real(t.optimizer_s),  Value::real(t.overhead_s),
          Value::real(t.comm_s),       Value::real(t.flops),
          Value::real(t.comm_bytes),   Value::real(t.tokens_per_second),
          Value::real(t.run_s),        Value::real(t.startup_s),
          Value::real(t.device_hours),
          t.cost_usd ? Value::real(*t.cost_usd) : Value::null(),
          Value::real(t.calibration)};
}

std::string general(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", v);
  return text;
}

double term_bytes(const MemoryPrediction& m, const std::string& name) {
  for (const MemoryTerm& t : m.terms) {
    if (t.name == name) return t.bytes;
  }
  return 0;
}

}  // namespace

std::optional<std::string> over_memory_limit(const Value& resolved, const MemoryLimit& limit) {
  MemoryPrediction m;
  if (!predict_point_memory(resolved, &m)) return std::nullopt;
  if (!limit.skips(m.deciding_bytes())) return std::nullopt;
  // In the units of the limit as written (80 GB, or 2.4 GiB): one system in one line.
  const bool binary = limit.text.find("iB") != std::string::npos;
  return "predicted " + std::string(m.deciding_name()) + " " +
         byte_size(m.deciding_bytes(), binary) + " a rank, over memory_limit (" + limit.text + ")";
}

void print_estimate(const Plan& plan, PlanFormat format, std::ostream& out,
                    const std::vector<std::string>& calibrate) {
  const PlanInfo& info = plan.info();
  const LoadedCalibration loaded = load_time_calibration(calibrate);
  const TimeCalibration& calibration = loaded.calibration;
  const std::optional<MemoryLimit>& limit = info.memory_limit;
  // The total leaves out the points over the memory limit, as run and submit skip them when
  // they have not run ok before (a plan reads no records).
  SweepTimeTotal time_total = predict_sweep_time(plan, loaded, [&](const SweepPoint& p) {
    return !limit || !over_memory_limit(p.config, *limit);
  });
  time_total.not_run_why = "over memory_limit";
  const bool priced = time_total.cost_usd.has_value();
  Columns columns(info);
  std::vector<std::string> header = columns.header;
  const bool people = format == PlanFormat::kTable;
  if (people) {
    for (const char* c : {"device", "peak", "resident", "init", "step", "parts of the step"})
      header.push_back(c);
    for (const char* c : {"step s", "tokens/s", "device-h"}) header.push_back(c);
    if (priced) header.push_back("cost USD");
  } else {
    for (const char* c : {"device", "mem_pred_peak_bytes", "mem_pred_resident_bytes",
                          "mem_pred_init_bytes", "mem_pred_step_bytes"})
      header.push_back(c);
    for (const std::string& t : estimate_terms()) header.push_back("mem_pred_" + t + "_bytes");
  }
  if (limit) header.push_back(people ? "memory_limit" : "skipped_by_memory_limit");
  if (!people) {
    for (const std::string& c : time_columns())
      header.push_back(c == "calibration" ? "time_calibration" : "time_pred_" + c);
  }
  size_t over = 0;
  // The sweep's largest prediction, and whether any point has none.
  double largest = -1, largest_resident = 0, largest_device = 0;
  size_t largest_index = 0, largest_resident_index = 0, largest_device_index = 0, unknown = 0;
  auto cells = [&](const SweepPoint& p, std::vector<Value>* row) {
    columns.row(p, row, people);
    const Estimate e = estimate_of(p, calibration);
    row->push_back(Value::string(e.gpu ? "gpu" : "cpu"));
    if (!e.known) {
      const size_t blanks = (people ? 5 + 3 + (priced ? 1 : 0)
                                    : 4 + estimate_terms().size() + time_columns().size()) +
                            (limit ? 1 : 0);
      for (size_t i = 0; i < blanks; ++i) row->push_back(Value::null());
      return e;
    }
    const MemoryPrediction& m = e.memory;
    if (people) {
      std::string parts;
      for (const MemoryTerm& t : m.terms) {
        if (t.bytes <= 0) continue;
        parts += (parts.empty() ? "" : " + ") + t.name + " " + gib(t.bytes);
      }
      row->push_back(Value::string(gib(m.peak)));
      row->push_back(m.resident > 0 ? Value::string(gib(m.resident)) : Value::null());
      for (double v : {m.init_peak, m.step_peak}) row->push_back(Value::string(gib(v)));
      row->push_back(Value::string(parts));
      const TimePrediction& t = e.time;
      if (t.known) {
        row->push_back(Value::string(general(t.step_s) + (t.calibration != 1 ? "*" : "")));
        row->push_back(Value::string(general(t.tokens_per_second)));
        row->push_back(Value::string(general(t.device_hours)));
        if (priced) {
          row->push_back(t.cost_usd ? Value::string(general(*t.cost_usd)) : Value::null());
        }
      } else {
        for (int i = 0; i < 3 + (priced ? 1 : 0); ++i) row->push_back(Value::null());
      }
    } else {
      row->push_back(Value::real(m.peak));
      row->push_back(m.resident > 0 ? Value::real(m.resident) : Value::null());
      for (double v : {m.init_peak, m.step_peak}) row->push_back(Value::real(v));
      for (const std::string& t : estimate_terms()) row->push_back(Value::real(term_bytes(m, t)));
    }
    if (limit) {
      const bool skipped = limit->skips(m.deciding_bytes());
      row->push_back(people ? Value::string(skipped ? "skipped" : "fits")
                            : Value::boolean(skipped));
    }
    if (!people) {
      for (Value& v : time_values(e.time)) row->push_back(std::move(v));
    }
    return e;
  };
  std::vector<Value> row;
  if (format == PlanFormat::kJson) {
    Value doc = Value::map();
    doc.set("sweep", Value::string(info.sweep_name));
    Value points = Value::list();
    plan.for_each_point(
        [&](const SweepPoint& p) {
          const Estimate e = estimate_of(p, calibration);
          Value v = Value::map();
          v.set("index", Value::integer(static_cast<std::int64_t>(p.index)));
          v.set("tag", Value::string(p.tag));
          v.set("varying", varying_values(info, p));
          v.set("device", Value::string(e.gpu ? "gpu" : "cpu"));
          if (e.known && limit) {
            v.set("skipped_by_memory_limit",
                  Value::boolean(limit->skips(e.memory.deciding_bytes())));
          }
          if (e.known) {
            Value m = Value::map();
            m.set("peak_bytes", Value::real(e.memory.peak));
            m.set("resident_bytes",
                  e.memory.resident > 0 ? Value::real(e.memory.resident) : Value::null());
            m.set("deciding", Value::string(e.memory.deciding_name()));
            m.set("init_peak_bytes", Value::real(e.memory.init_peak));
            m.set("step_peak_bytes", Value::real(e.memory.step_peak));
            Value terms = Value::map();
            for (const MemoryTerm& t : e.memory.terms) terms.set(t.name, Value::real(t.bytes));
            m.set("terms", terms);
            v.set("memory", m);
          } else {
            v.set("memory", Value::null());
          }
          if (e.time.known) {
            Value t = Value::map();
            const std::vector<Value> values = time_values(e.time);
            for (size_t i = 0; i < values.size(); ++i) t.set(time_columns()[i], values[i]);
            t.set("rate", Value::string(e.time.rate));
            v.set("time", t);
          } else {
            v.set("time", Value::null());
          }
          points.items().push_back(v);
        },
        true);
    doc.set("points", points);
    Value total = Value::map();
    total.set("points", Value::integer(static_cast<std::int64_t>(time_total.points)));
    total.set("predicted", Value::integer(static_cast<std::int64_t>(time_total.predicted)));
    total.set("calibrated", Value::integer(static_cast<std::int64_t>(time_total.calibrated)));
    total.set("measured_points", Value::integer(static_cast<std::int64_t>(time_total.measured)));
    total.set("device_hours", Value::real(time_total.device_hours));
    total.set("run_s", Value::real(time_total.run_s));
    total.set("cost_usd", time_total.cost_usd ? Value::real(*time_total.cost_usd) : Value::null());
    total.set("summary", Value::string(describe_sweep_time(time_total)));
    doc.set("total", total);
    out << emit_json(doc, 2, false) << "\n";
    return;
  }
  if (format == PlanFormat::kCsv) {
    TableWriter table(header, TableFormat::kCsv, out);
    plan.for_each_point(
        [&](const SweepPoint& p) {
          cells(p, &row);
          table.row(row);
        },
        true);
    table.finish();
    return;
  }
  TableWidths widths(header);
  plan.for_each_point(
      [&](const SweepPoint& p) {
        cells(p, &row);
        widths.add(row);
      },
      true);
  out << "# sweep " << info.sweep_name << " (" << info.sweep_path
      << "): predicted memory per rank and time (docs/metrics.md, \"Predicted memory\", "
         "\"Predicted time and cost\")\n";
  TableWriter table(header, TableFormat::kText, out, TableOptions{false, widths.widths()});
  plan.for_each_point(
      [&](const SweepPoint& p) {
        const Estimate e = cells(p, &row);
        table.row(row);
        if (!e.known) {
          ++unknown;
          return;
        }
        if (e.memory.peak > largest) {
          largest = e.memory.peak;
          largest_index = p.index;
        }
        double& most = e.memory.gpu ? largest_device : largest_resident;
        if (e.memory.resident > most) {
          most = e.memory.resident;
          (e.memory.gpu ? largest_device_index : largest_resident_index) = p.index;
        }
        if (limit && limit->skips(e.memory.deciding_bytes())) ++over;
      },
      true);
  table.finish();
  out << "# " << plural(info.selected_points, "point");
  if (largest >= 0) {
    out << "; the largest predicted peak " << gib(largest) << " a rank (point " << largest_index
        << ")";
  }
  if (largest_resident > 0) {
    out << "; the largest resident set (CPUs) " << gib(largest_resident) << " (point "
        << largest_resident_index << ")";
  }
  if (largest_device > 0) {
    out << "; the largest device memory (GPUs) " << gib(largest_device) << " (point "
        << largest_device_index << ")";
  }
  if (unknown > 0) out << "; " << plural(unknown, "point") << " without a prediction (commands)";
  if (limit) {
    out << "\n# memory_limit (" << limit->text << "): " << plural(over, "point")
        << " predicted over it, which bench-sweep run and submit skip (compared: the resident "
           "set on CPUs, the device memory on GPUs)";
  }
  out << "\n# " << describe_sweep_time(time_total);
  if (time_total.calibrated > 0) out << " (marked *)";
  out << "\n";
}

void print_plan(const Plan& plan, PlanFormat format, std::ostream& out) {
  switch (format) {
    case PlanFormat::kTable:
      print_table(plan, out);
      return;
    case PlanFormat::kJson:
      print_json(plan, out);
      return;
    case PlanFormat::kCsv:
      print_csv(plan, out);
      return;
  }
}

std::string manifest_text(const Value& existing, const Plan& plan,
                          const std::set<std::string>* only) {
  const PlanInfo& info = plan.info();
  Value m = Value::map();
  if (existing.is_map()) {
    for (const Value::Entry& e : existing.entries()) {
      m.set(e.key, e.key == "points" ? Value::null() : e.value, e.key_mark);
    }
  }
  m.set("schema_version", Value::integer(kManifestSchemaVersion));
  m.set("sweep", Value::string(info.sweep_name));
  m.set("sweep_file",
        Value::string(fs::absolute(fs::path(info.sweep_path)).lexically_normal().string()));
  Value keys = Value::list();
  for (const std::string& k : info.varying_keys) keys.items().push_back(Value::string(k));
  m.set("varying_keys", keys);

  // Into `existing`, which outlives this function; `m` drops its copy of the points.
  std::unordered_map<std::string_view, const Value*> old_entries;
  std::vector<const Value*> old_order;
  if (const Value* points = existing.is_map() ? existing.find("points") : nullptr) {
    for (const Value& e : points->items()) {
      const Value* tag = e.is_map() ? e.find("tag") : nullptr;
      if (tag == nullptr || !tag->is_string()) continue;
      old_order.push_back(&e);
      old_entries[tag->as_string()] = &e;
    }
  }
  // The document around the points, which are written one at a time where the marker stands.
  const std::string marker = "\\u0001points\\u0001";  // as JSON escapes it
  m.set("points", Value::string("\x01points\x01"));
  std::string head = emit_json(m, 2, false);
  size_t at = head.find("\"" + marker + "\"");
  if (at == std::string::npos) throw std::logic_error("manifest: no place for the points");
  std::string text = head.substr(0, at);
  bool first = true;
  auto add = [&](const Value& e) {
    text += first ? "[\n    " : ",\n    ";
    first = false;
    text += emit_json(e, 2, false, 2);
  };
  std::set<std::string> in_sweep;
  plan.for_each_point(
      [&](const SweepPoint& p) {
        in_sweep.insert(p.tag);
        auto old = old_entries.find(p.tag);
        if (!p.selected && old == old_entries.end()) return;
        if (only != nullptr && only->count(p.tag) == 0 && old != old_entries.end()) {
          add(*old->second);
          return;
        }
        Value e = old == old_entries.end() ? Value::map() : *old->second;
        e.set("index", Value::integer(static_cast<std::int64_t>(p.index)));
        e.set("scenario", Value::string(p.scenario));
        e.set("repeat", Value::integer(p.repeat));
        e.set("tag", Value::string(p.tag));
        e.set("config_hash", Value::string(p.config_hash));
        e.set("varying", varying_values(info, p));
        e.erase("in_sweep");
        add(e);
      },
      false);
  for (const Value* old : old_order) {
    if (in_sweep.count(text_field(*old, "tag"))) continue;
    Value e = *old;
    e.set("in_sweep", Value::boolean(false));
    add(e);
  }
  text += first ? "[]" : "\n  ]";
  text += head.substr(at + marker.size() + 2);
  return text + "\n";
}

PlanWriteResult write_plan(const Plan& plan, const std::string& out_dir,
                           const std::set<std::string>* only) {
  const PlanInfo& info = plan.info();
  fs::path root(out_dir);
  std::error_code ec;
  if (fs::exists(root, ec) && !fs::is_directory(root, ec)) {
    throw conflict(out_dir, "exists and is not a directory", "choose another --out");
  }

  // Check everything first; write nothing if anything is wrong.
  std::string manifest_path = (root / kManifestFile).string();
  std::optional<std::string> manifest_text = read_file_if_exists(manifest_path, kMaxSmallFile, Links::kRefuse);
  Value existing_manifest;
  if (manifest_text) {
    try {
      existing_manifest = parse_own_yaml(*manifest_text, manifest_path);
    } catch (const Error& e) {
      throw conflict(manifest_path, "cannot be read: " + e.message(),
                     "move it away, or plan into another --out");
    }
    const Value* sweep = existing_manifest.is_map() ? existing_manifest.find("sweep") : nullptr;
    if (sweep == nullptr || !sweep->is_string()) {
      throw conflict(manifest_path, "is not a sweepbench manifest", "choose another --out");
    }
    if (sweep->as_string() != info.sweep_name) {
      throw conflict(manifest_path,
                     "belongs to sweep '" + sweep->as_string() + "', not '" + info.sweep_name + "'",
                     "each sweep gets its own --out directory");
    }
  }

  // What each point's config.yaml needs: written (absent), rewritten (same config_hash, only
  // scheduling-only keys changed), nothing, or it is a conflict. Decided twice, in a pass that
  // checks every point and one that writes, so no point's text is held.
  enum class Need { kWrite, kUpdate, kNothing };
  std::vector<Error> conflicts;
  auto need_of = [&](const SweepPoint& p, const std::string& text) {
    fs::path dir = root / p.tag;
    std::string path = (dir / kConfigFile).string();
    // A point directory that is a symbolic link is refused, not followed: results would be
    // written wherever it points, outside --out (docs/running.md).
    if (fs::is_symlink(dir, ec)) {
      conflicts.push_back(
          conflict(dir.string(),
                   link_text(dir.string()) + ": sweepbench never follows a point directory's link",
                   "move the directory it points to here, or remove the link"));
      return Need::kNothing;
    }
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
      conflicts.push_back(conflict(dir.string(), "exists and is not a directory",
                                   "move it away, or plan into another --out"));
      return Need::kNothing;
    }
    std::optional<std::string> old = read_file_if_exists(path, kMaxSmallFile, Links::kRefuse);
    if (!old) return Need::kWrite;
    if (*old == text) return Need::kNothing;
    std::string old_hash = existing_hash(path, *old);
    if (old_hash == p.config_hash) return Need::kUpdate;
    conflicts.push_back(conflict(
        path,
        (old_hash.empty()
             ? std::string("holds no config this plan can compare (no config_hash line, and it "
                           "does not read as a config")
             : "holds another config (config_hash " + old_hash.substr(0, 12)) +
            "; the plan's is " + p.config_hash.substr(0, 12) + ")",
        "nothing was changed; plan into another --out, or move " + dir.string() + " away"));
    return Need::kNothing;
  };
  PlanWriteResult result;
  auto selected = [&](const SweepPoint& p) { return only == nullptr || only->count(p.tag) > 0; };
  plan.for_each_point(
      [&](const SweepPoint& p) {
        if (!selected(p)) return;
        std::string text = point_config_file_text(p.config);
        size_t before = conflicts.size();
        Need need = need_of(p, text);
        if (conflicts.size() != before) return;
        if (need == Need::kWrite) ++result.written;
        if (need == Need::kUpdate) ++result.updated;
        if (need == Need::kNothing) ++result.unchanged;
      },
      true);
  if (!conflicts.empty()) {
    const Error& first = conflicts.front();
    std::string more =
        conflicts.size() > 1 ? " (and " + plural(conflicts.size() - 1, "more conflict") + ")" : "";
    throw Error(ErrorKind::kConflict, first.mark(), "", first.message() + more, first.hint());
  }

  make_directories(root.string());
  plan.for_each_point(
      [&](const SweepPoint& p) {
        if (!selected(p)) return;
        std::string text = point_config_file_text(p.config);
        if (need_of(p, text) == Need::kNothing) return;
        fs::path dir = root / p.tag;
        make_directories(dir.string());
        write_file_atomic((dir / kConfigFile).string(), text);
      },
      true);
  if (!conflicts.empty()) {
    // Something changed the directory between the two passes.
    throw Error(ErrorKind::kConflict, conflicts.front().mark(), "",
                conflicts.front().message() + " (it changed while the plan was written)",
                conflicts.front().hint());
  }
  std::string new_manifest = sweepbench::manifest_text(existing_manifest, plan, only);
  if (!manifest_text || *manifest_text != new_manifest) {
    write_file_atomic(manifest_path, new_manifest);
    result.manifest_changed = true;
  }
  return result;
}

}  // namespace sweepbench
