#include "command/metric_eval.h"

#include <fcntl.h>
#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>

#include "command/metric_reading.h"
#include "os/fs.h"
#include "os/process.h"
#include "text/terminal.h"
#include "text/text.h"
#include "text/user_regex.h"

namespace sweepbench {
namespace fs = std::filesystem;
namespace {

// A stop signal is honoured within a second in the reading phase too: once one has come, the
// program's output and the metrics' files are read for a second more in all, then no longer (a
// program that printed gigabytes takes many seconds; the point is cancelled or timed out anyway,
// and bench-sweep's second stop would kill us).
std::optional<std::chrono::steady_clock::time_point> g_stop_seen;
bool g_read_in_part = false;

// A line rich wrote to continue the one before it, when it wrapped a log record at its width:
// indented 20 spaces or more (past the time column), not a new record's level (a record in the
// same second as the one before leaves its time column blank).
bool rich_continuation(const std::string& line) {
  size_t start = line.find_first_not_of(' ');
  if (start == std::string::npos || start < 20) return false;
  for (const char* level : {"DEBUG ", "INFO ", "WARNING ", "ERROR ", "CRITICAL "}) {
    if (line.compare(start, std::strlen(level), level) == 0) return false;
  }
  return true;
}

// for_each_line, with rich's wrapped lines joined to the line they continue when `unwrap`
// (fairseq2's log on a pipe); a joined line has the number of its first line.
bool for_each_logical_line(const std::string& path, bool unwrap,
                           const std::function<void(const std::string&, size_t, bool)>& fn) {
  if (!unwrap) return for_each_line(path, fn);
  std::string pending;
  size_t pending_number = 0;
  bool pending_cut = false, have = false;
  bool exists = for_each_line(path, [&](const std::string& line, size_t number, bool cut) {
    if (have && rich_continuation(line) && pending.size() < kMaxMatchedLine) {
      // In place: a copy of the line so far for each piece made a record wrapped into millions
      // of lines quadratic (3.2 MB/s).
      pending.erase(pending.find_last_not_of(" \t") + 1);
      pending += ' ';
      // Past rich's indent (spaces; tabs may follow, or be all there is).
      if (size_t start = line.find_first_not_of(" \t"); start != std::string::npos) {
        pending.append(line, start);
      }
      while (!pending.empty() && (pending.back() == ' ' || pending.back() == '\t')) {
        pending.pop_back();
      }
      pending_cut = pending_cut || cut;
      return;
    }
    if (have) fn(pending, pending_number, pending_cut);
    pending = line;
    pending_number = number;
    pending_cut = cut;
    have = true;
  });
  if (have) fn(pending, pending_number, pending_cut);
  return exists;
}

// The metrics of one run as they are read: a reading each, and the text sources they read.
struct MetricsRead {
  MetricsRead(const std::vector<MetricSpec>& s, const CommandOutputs& outputs)
      : specs(s), o(outputs), readings(s.size()), res(s.size()) {}

  const std::vector<MetricSpec>& specs;
  const CommandOutputs& o;
  std::vector<Reading> readings;
  // Text sources are read once each, every metric of the source matched against each line.
  std::map<std::string, std::vector<size_t>> by_text_source;  // path -> metrics
  std::set<std::string> unwrapped;  // text sources whose rich-wrapped lines are joined first
  std::vector<std::optional<UserRegex>> res;
};

// Each metric's record as far as its spec says, and the text sources it reads.
void start_readings(MetricsRead& run) {
  const std::vector<MetricSpec>& specs = run.specs;
  const CommandOutputs& o = run.o;
  std::map<std::string, std::vector<size_t>>& by_text_source = run.by_text_source;
  for (size_t i = 0; i < specs.size(); ++i) {
    const MetricSpec& s = specs[i];
    Reading& r = run.readings[i];
    r.spec = &s;
    CommandMetric& m = r.m;
    m.name = s.name;
    m.unit = s.unit;
    m.reduce = to_string(s.reduce);
    m.required = s.required;
    switch (s.source) {
      case MetricSource::kStdout:
        m.source = "stdout";
        by_text_source[o.stdout_path].push_back(i);
        break;
      case MetricSource::kStderr:
        m.source = "stderr";
        by_text_source[o.stderr_path].push_back(i);
        break;
      case MetricSource::kOutput:
        m.source = "output";
        by_text_source[o.stdout_path].push_back(i);
        by_text_source[o.stderr_path].push_back(i);
        break;
      case MetricSource::kFile: {
        m.source = o.expand(s.file);
        std::vector<std::string> files = metric_files(o, s.file);
        if (files.empty()) m.problem = "no file matches " + m.source;
        for (const std::string& f : files) by_text_source[f].push_back(i);
        break;
      }
      case MetricSource::kJson:
        break;
    }
    if (s.source != MetricSource::kJson) run.res[i].emplace(s.regex, s.mark, "regex");
    if (s.rich_wrapped && (s.source == MetricSource::kOutput || s.source == MetricSource::kStdout ||
                           s.source == MetricSource::kStderr)) {
      if (s.source != MetricSource::kStderr) run.unwrapped.insert(o.stdout_path);
      if (s.source != MetricSource::kStdout) run.unwrapped.insert(o.stderr_path);
    }
  }
}

// One line of a text source against each metric that reads it. `where_of(i)`: the source as
// metric i's messages name it.
void match_line(MetricsRead& run, const std::vector<size_t>& metrics,
                const std::function<std::string(size_t)>& where_of, const std::string& line,
                size_t n, bool cut) {
  const std::vector<MetricSpec>& specs = run.specs;
  for (size_t i : metrics) {
    Reading& r = run.readings[i];
    if (cut && r.cut_line.empty()) r.cut_line = where_of(i) + " line " + std::to_string(n);
    const std::int64_t before = r.count;
    run.res[i]->for_each_match(line, specs[i].group, [&](std::string_view match) {
      std::string text(match);
      if (specs[i].text) {
        r.add_text(text);
      } else if (specs[i].reduce == MetricReduce::kCount) {
        r.add(static_cast<double>(n));  // a count's values: line numbers
      } else if (std::optional<double> v =
                     specs[i].integer_part && trim(text) == "<1" ? 0.0 : number_of(text)) {
        // int() of the figure: the middle of [N, N + 1).
        r.add(specs[i].integer_part && std::isfinite(*v) ? *v + 0.5 : *v);
      } else if (r.m.problem.empty()) {
        r.m.problem = "'" + first_line(text, 60) + "' (" + where_of(i) + " line " +
                      std::to_string(n) + ") is not a number";
      }
    });
    if (r.count == before && r.count == 0 && r.near_line.empty() &&
        line.find(specs[i].name) != std::string::npos) {
      r.near_line = where_of(i) + " line " + std::to_string(n) + ": " + first_line(trim(line), 80);
    }
  }
}

// A text source read once, every metric of it matched against each line.
void read_text_source(MetricsRead& run, const std::string& path,
                      const std::vector<size_t>& metrics) {
  const std::vector<MetricSpec>& specs = run.specs;
  const CommandOutputs& o = run.o;
  std::vector<Reading>& readings = run.readings;
  auto where_of = [&, p = path](size_t i) {
    return specs[i].source == MetricSource::kOutput ? (p == o.stdout_path ? "stdout" : "stderr")
                                                    : readings[i].m.source;
  };
  bool exists = true;
  try {
    exists = for_each_logical_line(path, run.unwrapped.count(path) != 0,
                                   [&](const std::string& line, size_t n, bool cut) {
                                     match_line(run, metrics, where_of, line, n, cut);
                                   });
  } catch (const Error& e) {
    for (size_t i : metrics) {
      if (readings[i].m.problem.empty()) readings[i].m.problem = path + ": " + e.message();
    }
  }
  if (!exists) {
    for (size_t i : metrics) {
      if (readings[i].m.problem.empty()) {
        readings[i].m.problem = readings[i].m.source + " does not exist";
      }
    }
  }
}

// The JSON metrics, and the better sources of figures (fairseq2's JSON lines), each file they
// read read once for all of them. Returns each metric's readings of its better sources.
std::vector<std::vector<Reading>> read_json_metrics(MetricsRead& run) {
  const std::vector<MetricSpec>& specs = run.specs;
  std::vector<std::vector<Reading>> preferred(specs.size());
  JsonMetrics json(run.o);
  for (size_t i = 0; i < specs.size(); ++i) {
    preferred[i].resize(specs[i].preferred.size());
    for (size_t k = 0; k < specs[i].preferred.size(); ++k) {
      Reading& b = preferred[i][k];
      b.spec = &specs[i].preferred[k];
      b.m.name = specs[i].name;
      b.m.unit = specs[i].unit;
      b.m.reduce = to_string(b.spec->reduce);
      b.m.required = specs[i].required;
      json.add(&b);
    }
    if (specs[i].source == MetricSource::kJson) json.add(&run.readings[i]);
  }
  json.read();
  return preferred;
}

// A metric's record from its reading: the value reduced, or why there is none.
CommandMetric finish_metric(const MetricSpec& spec, Reading& r, std::vector<Reading>& preferred) {
  // A better source of the same figure that has it is read instead (fairseq2's JSON lines).
  for (Reading& b : preferred) {
    if (b.count == 0) continue;
    r = std::move(b);
    r.spec = &spec;
    break;
  }
  CommandMetric& m = r.m;
  m.found = r.count > 0 || spec.reduce == MetricReduce::kCount;
  m.value = m.found ? r.reduced() : std::numeric_limits<double>::quiet_NaN();
  if (!m.found && m.problem.empty() && r.skipped > 0) {
    m.problem = "only " + plural(r.skipped, "value") + " read, and " +
                (spec.skip == 1 ? std::string("the first is")
                                : "the first " + std::to_string(spec.skip) + " are") +
                " left out as the program's warm-up";
  }
  if (!m.found && m.problem.empty()) {
    // A parser's pattern is its own business: named, not spelled.
    std::string pattern =
        spec.parser.empty() ? spec.regex : "the " + spec.parser + " parser's pattern";
    m.problem = spec.source == MetricSource::kJson
                    ? "nothing at " + spec.pointer + " in " + m.source
                    : "no line of " + m.source + " matches " + pattern;
    if (!r.near_line.empty()) m.problem += "; it is named on " + r.near_line;
  }
  if (!m.found && !r.cut_line.empty()) {
    m.problem += " (" + r.cut_line + " is longer than " + std::to_string(kMaxMatchedLine >> 20) +
                 " MiB: only its first MiB was read)";
  }
  if (spec.text) {
    m.is_text = true;
    m.value = std::numeric_limits<double>::quiet_NaN();
    m.text = spec.reduce == MetricReduce::kFirst ? r.first_text : r.last_text;
    if (m.found) m.problem.clear();
    if (r.text_cut) {
      m.problem = "a value longer than " + std::to_string(kMaxMetricText) + " bytes was cut there";
    }
  } else if (m.found && r.count > 0) {
    m.problem.clear();  // a value was read after all
    if (r.count > static_cast<std::int64_t>(kMaxKeptValues)) {
      m.problem = with_commas(static_cast<double>(r.count)) + " values read; the " + m.reduce +
                  " is of all of them; the first " +
                  with_commas(static_cast<double>(kMaxKeptValues)) + " are kept";
    }
  }
  if (!r.salvaged.empty())
    m.problem = m.problem.empty() ? r.salvaged : m.problem + "; " + r.salvaged;
  if (r.records_without > 0) {
    std::string gap = plural(static_cast<size_t>(r.records_without), "record") + " of " + m.source +
                      " selected for it had no " + spec.pointer;
    m.problem = m.problem.empty() ? gap : m.problem + "; " + gap;
  }
  return std::move(m);
}

}  // namespace

void note_read_in_part(const std::string& path) {
  std::fprintf(stderr, "bench-command: a stop signal came: %s was read only in part\n",
               terminal_safe(path, false).c_str());
  g_read_in_part = true;
}

bool reading_must_stop() {
  if (received_stop_signal() == 0) return false;
  auto now = std::chrono::steady_clock::now();
  if (!g_stop_seen) g_stop_seen = now;
  return now - *g_stop_seen > std::chrono::seconds(1);
}

bool for_each_line(const std::string& path,
                   const std::function<void(const std::string&, size_t, bool)>& fn) {
  int fd = open_regular_file(path);
  if (fd < 0) return false;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  std::string line;
  bool cut = false;
  size_t number = 1;
  char buf[1 << 16];
  char previous = 0;
  size_t chunks = 0;
  auto emit = [&]() {
    fn(line, number++, cut);
    line.clear();
    cut = false;
  };
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw io_error(path, "cannot read", errno);
    if (n == 0) break;
    if (++chunks % 16 == 0 && reading_must_stop()) {
      note_read_in_part(path);
      return true;  // no last line: it would be cut where the reading stopped
    }
    for (ssize_t i = 0; i < n; ++i) {
      char c = buf[i];
      if (c == '\n' || c == '\r') {
        // "\r\n" is one end of line.
        if (!(c == '\n' && previous == '\r')) emit();
      } else if (line.size() < kMaxMatchedLine) {
        line += c;
      } else {
        cut = true;
      }
      previous = c;
    }
  }
  if (!line.empty() || cut) emit();
  return true;
}

std::string path_in(const CommandOutputs& o, const std::string& file, bool pattern) {
  std::string expanded = pattern ? o.expand_pattern(file) : o.expand(file);
  fs::path p(expanded);
  if (p.is_absolute()) return expanded;
  return (fs::path(pattern ? glob_escape(o.point_dir) : o.point_dir) / p).string();
}

std::optional<double> number_of(const std::string& text) {
  std::string t = trim(text);
  // Thousands separators, as fairseq2 and humans print them: 12,345 or 1,234.5.
  if (t.find(',') != std::string::npos) {
    static const UserRegex grouped(R"(-?[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?)", Mark(), "");
    if (!grouped.full_match(t)) return std::nullopt;
    t.erase(std::remove(t.begin(), t.end(), ','), t.end());
  }
  if (t == "nan" || t == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (t == "inf" || t == "Infinity") return std::numeric_limits<double>::infinity();
  if (t == "-inf" || t == "-Infinity") return -std::numeric_limits<double>::infinity();
  return parse_double(t);
}

std::vector<std::string> metric_files(const CommandOutputs& o, const std::string& file) {
  std::string path = path_in(o, file);
  std::string pattern = path_in(o, file, true);
  if (pattern.find_first_of("*?[") == std::string::npos) return {path};
  std::vector<std::string> files;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) files.push_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  return files;
}

std::vector<CommandMetric> read_metrics(const std::vector<MetricSpec>& specs,
                                        const CommandOutputs& o) {
  MetricsRead run(specs, o);
  start_readings(run);
  for (const auto& source : run.by_text_source) read_text_source(run, source.first, source.second);
  std::vector<std::vector<Reading>> preferred = read_json_metrics(run);
  std::vector<CommandMetric> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    out.push_back(finish_metric(specs[i], run.readings[i], preferred[i]));
  }
  return out;
}

bool output_read_in_part() { return g_read_in_part; }

}  // namespace sweepbench
