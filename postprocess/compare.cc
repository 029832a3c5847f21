#include "postprocess/compare.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "config/config.h"
#include "config/schema.h"
#include "config/table.h"
#include "metrics/summary.h"  // higher_is_better
#include "os/fs.h"
#include "postprocess/discover.h"
#include "postprocess/extract.h"
#include "postprocess/point_columns.h"
#include "postprocess/point_row.h"
#include "postprocess/reader_pool.h"
#include "postprocess/table_ops.h"
#include "postprocess/table_writer.h"
#include "postprocess/tool_main.h"
#include "text/error.h"
#include "text/exit_codes.h"
#include "text/text.h"

namespace sweepbench {
namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace {

// What is compared when --metric names nothing: the headline of each workload (docs/extract.md),
// those both sides have. A serve point's (metrics/serve_columns.h; its headline level's, or a
// level's in a table of levels) are medians, as inference's, which a few repeats can judge (a
// p99 of 200 requests is about their third largest), and goodput for the tail the SLA bounds;
// its `seconds` (the server's start and every level) is none.
const std::vector<std::string> kDefaultMetrics = {"train_tokens_per_second",
                                                  "step_time_median_s",
                                                  "mem_peak_bytes",
                                                  "output_tps",
                                                  "ttft_p50_s",
                                                  "tpot_p50_s",
                                                  "output_tokens_per_second",
                                                  "ttft_p50_ms",
                                                  "tpot_p50_ms",
                                                  "goodput",
                                                  "seconds"};

std::string text_in(const Row& row, const std::string& column) {
  auto it = row.find(column);
  if (it == row.end() || it->second.is_null()) return "";
  return it->second.is_string() ? it->second.as_string() : cell_text(it->second, TableFormat::kCsv);
}

// The config columns whose values differ between the rows of one side: the sweep's axes.
std::vector<std::string> varying_config_keys(const std::vector<Row>& rows) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const Row& r : rows) {
    for (const auto& [c, v] : r) {
      if (!is_config_column(c) || seen.count(c) != 0) continue;
      seen.insert(c);
      std::set<std::string> values;
      for (const Row& other : rows) values.insert(text_in(other, c));
      if (values.size() > 1) keys.push_back(c);
    }
  }
  return keys;
}

// The keys a point's name shows: of the matched keys, those that tell points apart that the ones
// before them do not, the keys a sweep sets before those derived from them (eval.micro_batch
// follows train.micro_batch: "micro_batch=4", not "micro_batch=4 micro_batch=4"). The names part
// the rows exactly as all the matched keys do.
std::vector<std::string> naming_keys(const std::vector<std::string>& match,
                                     const std::vector<Row>& baseline,
                                     const std::vector<Row>& candidate) {
  std::vector<std::string> ordered = match;
  auto derived = [](const std::string& k) {
    const KeySpec* spec = Schema::get().lookup(k).spec;
    return spec != nullptr && spec->derived;
  };
  std::stable_partition(ordered.begin(), ordered.end(),
                        [&](const std::string& k) { return !derived(k); });
  std::vector<std::string> keys;
  // The rows' values of the keys taken so far; a key is taken when it splits one of them.
  std::map<std::string, std::set<std::string>> seen;
  for (const std::string& k : ordered) {
    seen.clear();
    bool splits = false;
    for (const std::vector<Row>* side : {&baseline, &candidate}) {
      for (const Row& r : *side) {
        std::string before;
        for (const std::string& taken : keys) before += text_in(r, taken) + "\n";
        std::set<std::string>& values = seen[before];
        values.insert(text_in(r, k));
        splits = splits || values.size() > 1;
      }
    }
    if (splits) keys.push_back(k);
  }
  return keys;
}

std::string point_name(const Row& row, const std::vector<std::string>& match) {
  std::string out;
  for (const std::string& k : match) {
    if (!out.empty()) out += " ";
    out += short_key(k) + "=" + text_in(row, k);
  }
  return out.empty() ? "all" : out;
}

// One side's rows from a results tree (as bench-extract reads it) or a bench-extract CSV.
std::vector<Row> load_side(const std::string& path, const std::string& option, std::ostream& err) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    PointSearch search = find_point_dirs({path});
    for (const std::string& w : search.warnings) err << "bench-compare: warning: " << w << "\n";
    if (search.points.empty()) {
      throw Error::input(Mark::in(path), "", "holds no results (no point directories)",
                         "give a results tree (bench-sweep run --out) or a bench-extract CSV");
    }
    ExtractOptions options;
    ExtractTable table = extract_points(search.points, options);
    for (const std::string& w : table.warnings) err << "bench-compare: warning: " << w << "\n";
    return table.rows;
  }
  // A table of a few thousand points is megabytes; 1 GiB is far past any.
  std::optional<std::string> text = read_file_if_exists(path, size_t{1} << 30);
  if (!text) {
    throw Error::input(Mark::in(option + " " + path), "", "cannot be read",
                       "give a results tree or a CSV that bench-extract wrote");
  }
  CsvTable csv = parse_csv(*text, path);
  std::vector<Row> rows;
  for (const std::vector<std::string>& fields : csv.rows) {
    Row r;
    for (size_t i = 0; i < csv.columns.size(); ++i) {
      if (!fields[i].empty()) r[csv.columns[i]] = Value::string(fields[i]);
    }
    rows.push_back(std::move(r));
  }
  if (rows.empty() ||
      std::find(csv.columns.begin(), csv.columns.end(), "status") == csv.columns.end()) {
    throw Error::input(Mark::in(path), "", "is not a bench-extract table (no rows, or no status)",
                       "write one with bench-extract -i TREE -o FILE.csv");
  }
  return rows;
}

// A training run's steps, for a metric of its mean step time: the step times' batch means, and
// for a throughput the amount of a step (rate = amount / mean step time; 0 for step_time_mean_s
// itself). Nothing for another metric or a row without them (a CSV).
struct RunSteps {
  std::vector<double> batch_means;
  double amount = 0;
};
std::optional<RunSteps> run_steps(const Row& row, const std::string& metric) {
  auto it = row.find(kStepBatchMeans);
  if (it == row.end() || !it->second.is_list()) return std::nullopt;
  RunSteps out;
  for (const Value& v : it->second.items()) {
    if (v.is_number() && v.as_float() > 0) out.batch_means.push_back(v.as_float());
  }
  if (out.batch_means.empty()) return std::nullopt;
  if (metric == "step_time_mean_s") return out;
  if (metric != "train_tokens_per_second" && metric != "train_samples_per_second" &&
      metric != "tokens_per_second_per_device") {
    return std::nullopt;
  }
  std::optional<double> step = cell_number(row, "step_time_mean_s");
  std::optional<double> rate = cell_number(row, metric);
  if (!step || !rate || !(*step > 0)) return std::nullopt;
  out.amount = *rate * *step;
  return out;
}

// One side of a point for a metric. One run whose steps were kept: its batch means (a throughput
// as a step's amount over their mean). Repeats: the runs' values, each with the relative error
// its own steps show where it has them (the floor of runs_mean).
SideMean side_of(const std::vector<const Row*>& rows, const std::string& metric, bool from_steps) {
  if (from_steps) {
    const RunSteps steps = *run_steps(*rows.front(), metric);
    const SideMean time = batches_mean(steps.batch_means);
    return steps.amount > 0 ? rate_of(time, steps.amount) : time;
  }
  std::vector<double> values, within;
  for (const Row* r : rows) {
    std::optional<double> v = cell_number(*r, metric);
    if (!v) continue;
    values.push_back(*v);
    std::optional<RunSteps> steps = run_steps(*r, metric);
    const SideMean time = steps ? batches_mean(steps->batch_means) : SideMean{};
    within.push_back(time.mean > 0 ? std::fabs(*v) * time.se / time.mean : SideMean::kNaN);
  }
  return runs_mean(values, within);
}

// A metric's direction (metrics/summary.h): by the unit a command declared for it on either
// side, else by its name.
bool metric_higher_is_better(const std::string& metric, const std::vector<Row>& a,
                             const std::vector<Row>& b) {
  std::string unit = declared_unit(a, metric);
  if (unit.empty()) unit = declared_unit(b, metric);
  return higher_is_better(metric, unit);
}

// --metric and --match name columns: one that neither side has (a typo), or a --metric whose
// cells are not numbers (status, tag), is an error naming it, not an empty table (exit 0) or
// every point pooled into one sample.
void check_named_columns(const std::vector<Row>& a, const std::vector<Row>& b,
                         const CompareOptions& o) {
  // Every measured column sweepbench writes counts as known even where no row has it (every
  // point of both sides failed: inconclusive, exit 9 with --fail-on, not a typo).
  std::set<std::string> columns(metric_columns().begin(), metric_columns().end()), numeric;
  std::set<std::string> text;  // columns with a cell that is words, not a number
  for (const std::vector<Row>* rows : {&a, &b}) {
    for (const Row& r : *rows) {
      // A command's metrics are its units map's names, whether its points measured them or not.
      std::vector<std::string> declared;
      add_command_metrics(r, &declared);
      columns.insert(declared.begin(), declared.end());
      for (const auto& [c, v] : r) {
        columns.insert(c);
        if (cell_number(r, c)) {
          numeric.insert(c);
        } else if (v.is_string() && !v.as_string().empty()) {
          text.insert(c);
        }
      }
    }
  }
  auto near_hint = [](const std::string& name, const std::set<std::string>& among,
                      const std::string& otherwise) {
    std::optional<std::string> near =
        closest_match(name, std::vector<std::string>(among.begin(), among.end()));
    return near ? "did you mean '" + *near + "'?" : otherwise;
  };
  for (const std::string& m : o.metrics) {
    if (columns.count(m) == 0) {
      throw Error::input(Mark::in("--metric " + m), "", "neither side has this column",
                         near_hint(m, numeric, "`bench-extract --columns` lists the columns"));
    }
    if (numeric.count(m) == 0 && text.count(m) > 0) {
      throw Error::input(Mark::in("--metric " + m), "",
                         "is not a metric: no cell of it on either side is a number",
                         "compare a measured column, such as train_tokens_per_second");
    }
  }
  for (const std::string& k : o.match) {
    if (columns.count(k) == 0) {
      std::set<std::string> keys;
      for (const std::string& c : columns) {
        if (is_config_column(c) || c == "scenario") keys.insert(c);
      }
      throw Error::input(Mark::in("--match " + k), "", "neither side has this key",
                         near_hint(k, keys, "match on config keys, such as train.micro_batch"));
    }
  }
}

}  // namespace

Sides split_sides(const std::vector<Row>& rows, const std::string& side) {
  Sides s;
  const Mark mark = Mark::in("--side " + side);
  size_t eq = side.find('=');
  s.key = side.substr(0, eq);
  std::vector<std::string> values;
  bool has_key = false;
  for (const Row& r : rows) {
    if (r.count(s.key) == 0) continue;
    has_key = true;
    std::string v = text_in(r, s.key);
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  }
  if (!has_key) {
    std::set<std::string> columns;
    for (const Row& r : rows) {
      for (const auto& [c, v] : r) {
        if (is_config_column(c)) columns.insert(c);
      }
    }
    std::vector<std::string> known(columns.begin(), columns.end());
    std::optional<std::string> near = closest_match(s.key, known);
    throw Error::input(mark, "", "no point has the key '" + s.key + "'",
                       near ? "did you mean '" + *near + "'?"
                            : "give a config key that varies, such as container.image");
  }
  if (!is_config_column(s.key) && s.key != "scenario") {
    throw Error::input(mark, "", "'" + s.key + "' is not a config key",
                       "the sides are the values of a key of the points' configs, such as "
                       "container.image, or their scenario");
  }
  auto listed = [&] {
    std::vector<std::string> shown;
    for (const std::string& v : values) {
      if (shown.size() == 8) {
        shown.push_back("and " + std::to_string(values.size() - 8) + " more");
        break;
      }
      shown.push_back(v.empty() ? "(empty)" : v);
    }
    return join(shown, ", ");
  };
  if (eq == std::string::npos) {
    if (values.size() != 2) {
      throw Error::input(mark, "",
                         s.key + " has " + std::to_string(values.size()) +
                             (values.size() == 1 ? " value" : " values") + " (" + listed() +
                             "): which two are the sides?",
                         "write --side " + s.key + "=BASELINE,CANDIDATE");
    }
    s.baseline_value = values[0];
    s.candidate_value = values[1];
  } else {
    std::vector<std::string> two = split_commas({side.substr(eq + 1)});
    if (two.size() != 2 || two[0] == two[1]) {
      throw Error::input(mark, "", "is not KEY=BASELINE,CANDIDATE (two different values)",
                         "e.g. --side container.image=old.sif,new.sif");
    }
    for (const std::string& v : two) {
      if (std::find(values.begin(), values.end(), v) == values.end()) {
        throw Error::input(mark, "", "no point has " + s.key + "=" + v,
                           "its values are: " + listed());
      }
    }
    s.baseline_value = two[0];
    s.candidate_value = two[1];
  }
  // A side is its value's text; values of different types that print alike (the integer 1 and
  // the string "1") are different configurations, and pooling them would compare a mix.
  for (const std::string& side_value : {s.baseline_value, s.candidate_value}) {
    std::set<std::string> types;
    for (const Row& r : rows) {
      auto it = r.find(s.key);
      if (it != r.end() && text_in(r, s.key) == side_value) types.insert(it->second.type_name());
    }
    if (types.size() > 1) {
      std::vector<std::string> names(types.begin(), types.end());
      throw Error::input(mark, "",
                         s.key + "=" + side_value + " is " + join(names, " and ") +
                             " in different points: one side would pool different configurations",
                         "give the key one type throughout the sweep (quote it, or not)");
    }
  }
  for (const Row& r : rows) {
    if (r.count(s.key) == 0) continue;
    std::string v = text_in(r, s.key);
    if (v == s.baseline_value) s.baseline.push_back(r);
    if (v == s.candidate_value) s.candidate.push_back(r);
  }
  return s;
}

CompareResult compare_tables(const std::vector<Row>& baseline, const std::vector<Row>& candidate,
                             const CompareOptions& o) {
  CompareResult result;
  result.match = o.match;
  if (result.match.empty()) {
    std::set<std::string> keys;
    for (const std::string& k : varying_config_keys(baseline)) keys.insert(k);
    for (const std::string& k : varying_config_keys(candidate)) keys.insert(k);
    result.match.assign(keys.begin(), keys.end());
    // A table of serve points' load levels (bench-extract --series levels): each level is
    // compared with the same level of the other side, never pooled with the point's others.
    auto levels = [](const std::vector<Row>& rows) {
      return std::any_of(rows.begin(), rows.end(),
                         [](const Row& r) { return r.count("level_index") != 0; });
    };
    if (levels(baseline) || levels(candidate)) result.match.push_back("level");
  }
  const std::vector<std::string> naming = naming_keys(result.match, baseline, candidate);
  // Each side's ok rows by point, in the baseline's order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Row*>> base, cand;
  for (const Row& r : baseline) {
    if (!row_ok(r)) continue;
    const std::string name = point_name(r, naming);
    if (base.count(name) == 0) order.push_back(name);
    base[name].push_back(&r);
  }
  for (const Row& r : candidate) {
    if (row_ok(r)) cand[point_name(r, naming)].push_back(&r);
  }
  for (const auto& [name, rows] : base) {
    if (cand.count(name) == 0) result.unmatched.push_back("baseline: " + name);
  }
  for (const auto& [name, rows] : cand) {
    if (base.count(name) == 0) result.unmatched.push_back("candidate: " + name);
  }
  std::vector<std::string> metrics = o.metrics;
  if (metrics.empty()) {
    for (const std::string& m : kDefaultMetrics) {
      auto has = [&](const std::vector<Row>& rows) {
        return std::any_of(rows.begin(), rows.end(), [&](const Row& r) {
          return cell_number(r, m) && (m != "seconds" || text_in(r, "benchmark") != "serve");
        });
      };
      if (has(baseline) && has(candidate)) metrics.push_back(m);
    }
  }
  // What --fail-on gates is compared too.
  for (const FailOn& f : o.fail_on) {
    if (std::find(metrics.begin(), metrics.end(), f.metric) == metrics.end()) {
      metrics.push_back(f.metric);
    }
  }
  for (const std::string& name : order) {
    if (cand.count(name) == 0) continue;
    // A serve point's row holds its headline level's figures (the SLA's answer, else its
    // highest level): sides whose headline loads differ compare different loads.
    for (const char* load : {"request_rate", "concurrency"}) {
      std::set<std::string> sides[2];
      for (const Row* r : base[name]) sides[0].insert(text_in(*r, load));
      for (const Row* r : cand[name]) sides[1].insert(text_in(*r, load));
      if (sides[0] == sides[1] ||
          (sides[0] == std::set<std::string>{""} && sides[1] == std::set<std::string>{""})) {
        continue;
      }
      auto listed = [](const std::set<std::string>& v) {
        std::vector<std::string> out;
        for (const std::string& x : v) out.push_back(x.empty() ? "none" : x);
        return join(out, ", ");
      };
      result.warnings.push_back(
          name + ": the headline " + load + " differs (" + listed(sides[0]) + " against " +
          listed(sides[1]) +
          "): its figures are of different loads; compare level by level (bench-extract "
          "--series levels -o levels.csv, then bench-compare on the tables)");
    }
    for (const std::string& m : metrics) {
      Comparison c;
      c.point = name;
      c.metric = m;
      // One run a side whose steps were kept (a metric of the mean step time): their batch
      // means. Otherwise the runs.
      c.from_steps = base[name].size() == 1 && cand[name].size() == 1 &&
                     run_steps(*base[name].front(), m) && run_steps(*cand[name].front(), m);
      c.baseline = side_of(base[name], m, c.from_steps);
      c.candidate = side_of(cand[name], m, c.from_steps);
      if (c.baseline.n == 0 || c.candidate.n == 0) continue;
      result.rows.push_back(std::move(c));
    }
  }
  // The family: the comparisons that have the samples for a verdict (one that cannot be judged,
  // a value a side, would only widen the others' intervals). Each interval is at Bonferroni's
  // level over it, and the verdict is read off the interval.
  auto judged = [&](const Comparison& c) {
    return c.baseline.n >= o.min_samples && c.candidate.n >= o.min_samples;
  };
  const size_t family =
      static_cast<size_t>(std::count_if(result.rows.begin(), result.rows.end(), judged));
  result.level = family_level(o.alpha, family);
  result.family = family;
  for (Comparison& c : result.rows) {
    c.level = judged(c) ? result.level : 1 - o.alpha;
    c.change = relative_change(c.baseline, c.candidate, c.level);
    c.adjusted_p =
        judged(c) ? std::min(1.0, c.change.p * static_cast<double>(family)) : std::nan("");
    VerdictRule rule;
    rule.higher_is_better = metric_higher_is_better(c.metric, baseline, candidate);
    rule.margin = o.margin;
    rule.min_samples = o.min_samples;
    c.higher_is_better = rule.higher_is_better;
    c.verdict = verdict_of(c.change, c.baseline.n, c.candidate.n, rule);
  }
  // A geometric-mean row per metric over the points compared (benchstat's summary).
  for (const std::string& m : metrics) {
    std::vector<double> ratios;
    for (const Comparison& c : result.rows) {
      if (c.metric == m && c.point != "geomean") ratios.push_back(c.change.ratio);
    }
    if (ratios.size() < 2) continue;
    Comparison g;
    g.point = "geomean";
    g.metric = m;
    g.change.ratio = geometric_mean_change(ratios);
    g.change.low = g.change.high = g.change.p = g.adjusted_p = g.level = std::nan("");
    result.rows.push_back(std::move(g));
  }
  return result;
}

int fail_on_exit_code(const CompareResult& result, const std::vector<FailOn>& fail_on,
                      std::vector<std::string>* reasons) {
  bool regression = false, unknown = false;
  auto say = [&](std::string line) {
    if (reasons) reasons->push_back(std::move(line));
  };
  auto pct = [](double fraction) {
    char b[32];
    std::snprintf(b, sizeof b, "%+.1f%%", fraction * 100);
    return std::string(b);
  };
  for (const FailOn& f : fail_on) {
    char gate_text[64];
    std::snprintf(gate_text, sizeof gate_text, "%.4g%%", f.threshold * 100);
    const std::string gate = "--fail-on " + f.metric + ":" + gate_text;
    size_t seen = 0, bad = 0, unjudged = 0;
    for (const Comparison& c : result.rows) {
      if (c.metric != f.metric || c.point == "geomean") continue;
      ++seen;
      const double worse = c.higher_is_better ? -c.change.ratio : c.change.ratio;
      const std::string at = c.point.empty() ? "the point" : "point " + c.point;
      char level[16];
      std::snprintf(level, sizeof level, "%.3g%%", c.level * 100);
      const std::string figure = pct(c.change.ratio) + " [" + pct(c.change.low) + ", " +
                                 pct(c.change.high) + "] (" + level +
                                 " interval; n=" + std::to_string(c.baseline.n) + " and " +
                                 std::to_string(c.candidate.n) + ")";
      if (c.verdict == Verdict::kWorse && worse > f.threshold) {
        regression = true;
        ++bad;
        say("FAIL: " + gate + ": " + at + " got worse by " + figure + ", beyond " + gate_text);
      } else if (c.verdict == Verdict::kInconclusive) {
        unknown = true;
        ++unjudged;
        const std::string n =
            "n=" + std::to_string(c.baseline.n) + " and " + std::to_string(c.candidate.n);
        std::string why;
        if (std::isnan(c.change.ratio) || std::isnan(c.change.low) || std::isnan(c.change.high)) {
          why = "no interval (" + n + ")";
        } else if (c.change.low <= 0 && c.change.high >= 0) {
          why = figure + ": the interval holds both no change and a change beyond the margin";
        } else {
          why = "too few samples for a verdict (" + n + ")";
        }
        say("INCONCLUSIVE: " + gate + ": " + at + " could not be judged: " + why);
      }
    }
    if (!seen) {
      unknown = true;  // nothing to judge it by
      say("INCONCLUSIVE: " + gate + ": no point has " + f.metric + " on both sides");
    } else if (!bad && !unjudged) {
      say("ok: " + gate + ": " + std::to_string(seen) + " point" + (seen == 1 ? "" : "s") +
          ", none significantly worse beyond " + gate_text);
    }
  }
  // A point one side lacks (failed, or not run) is one the gate could not judge.
  if (!fail_on.empty() && !result.unmatched.empty()) {
    unknown = true;
    for (const std::string& u : result.unmatched) {
      say("INCONCLUSIVE: --fail-on: a point only in the " + u + " could not be judged");
    }
  }
  if (regression) return kExitRegression;
  if (unknown) return kExitInconclusive;
  return kExitOk;
}

std::string interval_level_text(const CompareResult& result) {
  char level[32];
  std::snprintf(level, sizeof level, "%.3g%%", result.level * 100);
  return std::string(level) + " intervals, simultaneous over the " +
         std::to_string(result.family) +
         " comparisons judged (Bonferroni); each verdict is read off its interval";
}

ExtractTable comparison_table(const CompareResult& result, bool for_people) {
  ExtractTable t;
  if (for_people) {
    t.columns = {"point", "metric", "baseline", "candidate", "change", "p", "verdict"};
  } else {
    t.columns = {"point",      "metric",      "samples", "baseline_mean", "candidate_mean",
                 "baseline_n", "candidate_n", "change",  "change_ci_low", "change_ci_high",
                 "ci_level",   "p",           "p_adjusted",  "verdict"};
  }
  auto percent = [](double r) {
    if (std::isnan(r)) return std::string("n/a");  // no geometric mean: a change of sign
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.1f%%", r * 100);
    return std::string(buf);
  };
  for (const Comparison& c : result.rows) {
    Row r;
    r["point"] = Value::string(c.point);
    r["metric"] = Value::string(c.metric);
    const bool summary = c.point == "geomean";
    if (for_people) {
      if (!summary) {
        r["baseline"] = Value::string(human_number(c.baseline.mean) + " (" +
                                      (c.from_steps ? "b" : "n") + "=" +
                                      std::to_string(c.baseline.n) + ")");
        r["candidate"] = Value::string(human_number(c.candidate.mean) + " (" +
                                       (c.from_steps ? "b" : "n") + "=" +
                                       std::to_string(c.candidate.n) + ")");
        // No interval (one sample a side): the change alone.
        const bool interval = std::isfinite(c.change.low) && std::isfinite(c.change.high);
        r["change"] = Value::string(percent(c.change.ratio) +
                                    (interval ? " [" + percent(c.change.low) + ", " +
                                                    percent(c.change.high) + "]"
                                              : std::string()));
        r["p"] = Value::string(human_number(c.adjusted_p));
        r["verdict"] = Value::string(verdict_name(c.verdict));
      } else {
        r["change"] = Value::string(percent(c.change.ratio));
      }
    } else {
      auto real = [](double v) { return std::isfinite(v) ? Value::real(v) : Value::null(); };
      if (!summary) {
        r["baseline_mean"] = real(c.baseline.mean);
        r["candidate_mean"] = real(c.candidate.mean);
        r["samples"] = Value::string(c.from_steps ? "batch means" : "runs");
        r["baseline_n"] = Value::integer(static_cast<std::int64_t>(c.baseline.n));
        r["candidate_n"] = Value::integer(static_cast<std::int64_t>(c.candidate.n));
        r["change_ci_low"] = real(c.change.low);
        r["change_ci_high"] = real(c.change.high);
        r["ci_level"] = real(c.level);
        r["p"] = real(c.change.p);
        r["p_adjusted"] = real(c.adjusted_p);
        r["verdict"] = Value::string(verdict_name(c.verdict));
      }
      r["change"] = real(c.change.ratio);
    }
    t.rows.push_back(std::move(r));
  }
  return t;
}

namespace {

const char* const kUsage = R"(bench-compare: two sets of results, point by point, with a verdict.

Usage: bench-compare BASELINE CANDIDATE [options]
       bench-compare RESULTS --side KEY[=BASELINE_VALUE,CANDIDATE_VALUE] [options]

BASELINE and CANDIDATE are results trees (bench-sweep run --out) or tables bench-extract wrote
(CSV). Points are matched on the keys that vary within either side (the sweeps' axes), or on
--match KEYS; a point's ok repeats on each side are its samples (at least 3 each for a verdict;
use `repeats:` in the sweep), one run's step batch means when each side has one training run.
For each metric: both means, the change in % with its interval, its p-value, and the verdict read
off the interval: better or worse when it excludes no change, ~ when it lies within --margin of
none, else inconclusive. One test makes all three (Student's t on the log of the ratio, Welch's
degrees of freedom); the intervals are simultaneous over the comparisons judged (Bonferroni, at
1 - alpha / their number) and the p-values adjusted alike. The direction that is better is the
metric's: throughputs up, times and memory down. A geomean row per metric sums up the points.
With --side, one set of results is both sides: the points whose KEY has the baseline's value
against those with the candidate's (one sweep's container.image axis, say), matched on the other
keys that vary.

Docs: docs/compare.md. Exit codes: 0; 2 bad input (also an -o among results); 3 the -o file
exists (use -f); with --fail-on, 8 when a listed metric got significantly worse beyond its
threshold, 9 when one could not be judged.

Options)";

}  // namespace

int bench_compare_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc;
  desc.add_options()("help,h", "Show this help")("baseline", po::value<std::string>(),
                                                 "The baseline's results")(
      "candidate", po::value<std::string>(), "The candidate's results")(
      "metric,m", po::value<std::vector<std::string>>()->composing(),
      "A metric to compare (repeatable, or A,B; default: the headline metrics both sides have)")(
      "match", po::value<std::vector<std::string>>()->composing(),
      "The config keys points are matched on (repeatable, or A,B; default: the keys that vary)")(
      "side", po::value<std::string>(),
      "KEY[=BASELINE,CANDIDATE]: compare the points of one set of results by this key's values")(
      "margin", po::value<std::string>()->default_value("2%"),
      "A change whose interval lies within this of none is ~ (the same)")(
      "alpha", po::value<double>()->default_value(0.05, "0.05"),
      "The chance of calling any equal pair different, over all the comparisons judged")(
      "fail-on", po::value<std::vector<std::string>>()->composing(),
      "METRIC:PCT: exit 8 when METRIC got significantly worse by more than PCT, 9 when it could "
      "not be judged (repeatable)")("force,f", "Replace the -o file if it exists")(
      "format", po::value<std::string>(), "table (default), md, csv, json or jsonl")(
      "output,o", po::value<std::string>(), "Write the table here (format from the extension)");
  po::positional_options_description positional;
  positional.add("baseline", 1).add("candidate", 1);
  return run_tool(
      "bench-compare", args, desc, kUsage, out, err,
      [&](const po::variables_map& vm) -> int {
        const bool one_set = vm.count("side") != 0;
        if (!vm.count("baseline") || (vm.count("candidate") != 0) == one_set) {
          err << "bench-compare: error: "
              << (one_set ? "with --side, give one set of results" : "give BASELINE and CANDIDATE")
              << "\nusage: bench-compare BASELINE CANDIDATE [options], or bench-compare RESULTS "
                 "--side KEY  (bench-compare --help)\n";
          return kExitUsage;
        }
        CompareOptions o;
        auto list = [&](const char* name) {
          if (!vm.count(name)) return std::vector<std::string>{};
          return split_commas(vm[name].as<std::vector<std::string>>());
        };
        o.metrics = list("metric");
        o.match = list("match");
        o.margin = parse_fraction(vm["margin"].as<std::string>(), "--margin");
        o.alpha = vm["alpha"].as<double>();
        if (!(o.alpha > 0 && o.alpha < 1)) {
          throw Error::input(Mark::in("--alpha"), "", "must be between 0 and 1", "0.05 is usual");
        }
        for (const std::string& f : list("fail-on")) {
          size_t colon = f.rfind(':');
          if (colon == std::string::npos || colon == 0) {
            throw Error::input(Mark::in("--fail-on " + f), "", "is not METRIC:PCT",
                               "write e.g. train_tokens_per_second:5%");
          }
          o.fail_on.push_back(
              {f.substr(0, colon),
               parse_fraction(f.substr(colon + 1), "--fail-on " + f.substr(0, colon + 1))});
        }
        std::optional<std::string> output;
        if (vm.count("output")) output = vm["output"].as<std::string>();
        // As bench-extract's -o: never a result, and an existing file only with -f.
        if (output) refuse_output_among_results(*output);
        if (output && !vm.count("force") && std::filesystem::exists(*output)) {
          throw Error(ErrorKind::kConflict, Mark::in(*output), "", "the output file exists",
                      "add -f to replace it, or choose another -o");
        }
        const std::vector<TableFormat> formats = {TableFormat::kText, TableFormat::kCsv,
                                                  TableFormat::kJson, TableFormat::kJsonl,
                                                  TableFormat::kMarkdown};
        TableFormat format = vm.count("format")
                                 ? parse_table_format(vm["format"].as<std::string>(), formats)
                             : output ? table_format_of_path(*output, formats)
                                      : TableFormat::kText;
        std::vector<Row> base, cand;
        std::string sides;
        if (one_set) {
          Sides s = split_sides(load_side(vm["baseline"].as<std::string>(), "RESULTS", err),
                                vm["side"].as<std::string>());
          if (std::find(o.match.begin(), o.match.end(), s.key) != o.match.end()) {
            throw Error::input(Mark::in("--match " + s.key), "",
                               "is the --side key: the sides differ in it by design",
                               "match on the other keys");
          }
          base = std::move(s.baseline);
          cand = std::move(s.candidate);
          sides = s.key + "=" + s.baseline_value + " (baseline) against " + s.key + "=" +
                  s.candidate_value + " (candidate)";
        } else {
          base = load_side(vm["baseline"].as<std::string>(), "BASELINE", err);
          cand = load_side(vm["candidate"].as<std::string>(), "CANDIDATE", err);
        }
        check_named_columns(base, cand, o);
        CompareResult result = compare_tables(base, cand, o);
        for (const FailOn& f : o.fail_on) {
          // A metric neither side has is a typo; one whose points all failed is inconclusive.
          auto has = [&](const std::vector<Row>& rows) {
            return std::any_of(rows.begin(), rows.end(),
                               [&](const Row& r) { return r.count(f.metric) != 0; });
          };
          if (!has(base) && !has(cand)) {
            throw Error::input(Mark::in("--fail-on " + f.metric), "",
                               "neither side has this metric",
                               "name a metric both sides have, or add it with --metric");
          }
        }
        for (const std::string& u : result.unmatched) {
          err << "bench-compare: warning: only in the " << u << "\n";
        }
        for (const std::string& w : result.warnings) err << "bench-compare: warning: " << w << "\n";
        const bool people = format == TableFormat::kText || format == TableFormat::kMarkdown;
        ExtractTable table = comparison_table(result, people);
        std::string match =
            result.match.empty() ? "nothing (one point a side)" : join(result.match, ", ");
        if (output) {
          std::ostringstream text;
          print_table(table, format, text, false);
          write_file_atomic(*output, text.str());
        } else {
          if (people && !sides.empty()) out << "# sides: " << sides << "\n";
          if (people) out << "# matched on " << match << "\n";
          if (people && result.family > 1) {
            out << "# " << interval_level_text(result) << "\n";
          }
          print_table(table, format, out, false);
        }
        // Each gate's verdict on stderr, a line each, so that a CI log shows why it failed.
        std::vector<std::string> reasons;
        const int code = fail_on_exit_code(result, o.fail_on, &reasons);
        for (const std::string& r : reasons) err << "bench-compare: " << r << "\n";
        if (code != kExitOk) {
          err << "bench-compare: exit " << code
              << (code == kExitRegression ? " (a --fail-on metric got worse)"
                                          : " (a --fail-on metric could not be judged)")
              << "\n";
        }
        return code;
      },
      &positional);
}

}  // namespace sweepbench
