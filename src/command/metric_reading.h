// What metric_eval.h's files share (metric_eval.cc, metric_json.cc, command_verdict.cc): the
// bounded reading of the program's output and files, which ends a second after a stop signal;
// one metric's reading, its reduction kept as values arrive (Reading); and the JSON metrics of a
// run, each file read once for all of them (JsonMetrics).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "command/command_outputs.h"
#include "command/json_reader.h"
#include "config/metric_spec.h"
#include "metrics/rank_result.h"
#include "text/text.h"

namespace sweepbench {

// True once a stop signal came more than a second ago: the reading must end.
bool reading_must_stop();
// Says that a stop signal cut the reading of `path` (output_read_in_part()).
void note_read_in_part(const std::string& path);

// Calls fn(line, number, cut) for each line of the file; '\r' ends a line too (progress bars
// redraw themselves with it, and a terminal shows each redraw as the line). A line longer than
// kMaxMatchedLine is given as its first kMaxMatchedLine bytes, with cut true. False: no such
// file. Throws Error(kIo) when the file is not a regular file (a FIFO, /dev/zero) or cannot be
// read: such a file never blocks or feeds the reader for ever.
bool for_each_line(const std::string& path,
                   const std::function<void(const std::string&, size_t, bool)>& fn);

// A metric's file under the point directory (unless absolute); `pattern`: as a glob pattern, in
// which only what the user wrote is special (the point directory and placeholders' values are
// escaped).
std::string path_in(const CommandOutputs& o, const std::string& file, bool pattern = false);

// The files a metric names: its path, or every file its glob pattern matches, sorted. Only the
// pattern the user wrote is a pattern: what a placeholder put in it ({out} holding '[x]') is
// escaped first, so it stands for itself.
std::vector<std::string> metric_files(const CommandOutputs& o, const std::string& file);

// A number as a program prints it: 12,345, 1.5e3, nan, inf; nullopt for anything else.
std::optional<double> number_of(const std::string& text);

// One metric being read: its record, and its reduction kept as values arrive, so that a program
// printing millions of matches costs a few numbers, not a list (only kMaxKeptValues are kept).
struct Reading {
  const MetricSpec* spec = nullptr;
  CommandMetric m;
  std::int64_t count = 0;
  size_t skipped = 0;  // values left out as the program's warm-up (MetricSpec::skip)
  double sum = 0, low = 0, high = 0, first = 0, last = 0;
  // Text sources whose longest lines were cut at kMaxMatchedLine: "stdout line 3".
  std::string cut_line;
  // While nothing matches: the first line that names the metric, which the pattern did not
  // read (a Trainer that prints `'train_runtime': '0:00:12'`), to say what was found instead.
  std::string near_line;
  // JSON records that `where` selects but that lack the pointer's member (a llama-bench record
  // without avg_ts): named in the metric's problem even when other records gave values.
  std::int64_t records_without = 0;
  // A JSON array cut short whose complete records were read: said in the metric's problem.
  std::string salvaged;
  // type: text: the first and last words read, and whether one was longer than kept.
  std::string first_text, last_text;
  bool text_cut = false;
  // A JSON metric's file gave nothing but a problem: its other files are not read for it.
  bool json_done = false;

  void add_text(std::string_view found) {
    // Valid UTF-8 (a program's bytes go on to our files and tables), cut on a character's start.
    std::string t = valid_utf8(found);
    if (t.size() > kMaxMetricText) {
      size_t end = kMaxMetricText;
      while (end > 0 && (static_cast<unsigned char>(t[end]) & 0xC0) == 0x80) --end;
      t.resize(end);
      text_cut = true;
    }
    if (count == 0) first_text = t;
    last_text = std::move(t);
    ++count;
  }

  void add(double v) {
    if (skipped < spec->skip) {  // the program's warm-up
      ++skipped;
      return;
    }
    if (count == 0) {
      first = low = high = v;
    } else {
      // NaN is neither lower nor higher: min and max are of the numbers (std::fmin).
      low = std::fmin(low, v);
      high = std::fmax(high, v);
    }
    last = v;
    sum += v;
    ++count;
    if (m.values.size() < kMaxKeptValues) m.values.push_back(v);
  }
  void clear() {
    count = 0;
    skipped = 0;
    sum = 0;
    m.values.clear();
    first_text.clear();
    last_text.clear();
  }
  double reduced() const {
    switch (spec->reduce) {
      case MetricReduce::kLast:
      case MetricReduce::kAll:
        return last;
      case MetricReduce::kFirst:
        return first;
      case MetricReduce::kMean:
        return sum / static_cast<double>(count);
      case MetricReduce::kMin:
        return low;
      case MetricReduce::kMax:
        return high;
      case MetricReduce::kSum:
        return sum;
      case MetricReduce::kCount:
        return static_cast<double>(count);
    }
    return 0;
  }
};

// The JSON metrics of a run, each file they read read once for all of them (a 1 MB file read
// by 40 metrics was parsed 40 times): every metric's files are listed first, then each file is
// read and its documents given to every metric that reads it.
class JsonMetrics {
 public:
  explicit JsonMetrics(const CommandOutputs& o) : o_(o) {}

  // Registers a JSON metric's reading (its files, in the order it reads them).
  void add(Reading* r);
  // Reads every registered file once: the program's output first, then the metrics' files in
  // the order of their paths (each metric's own files are in that order).
  void read();

 private:
  struct Use {
    Reading* reading;
    std::string shown;  // the file as the metric's messages name it
  };
  struct Source {
    std::string path;
    JsonLines lines;
    int rank = 0;  // stdout 0, stderr 1, a metric's file 2
    std::vector<Use> uses;
  };

  void use(std::pair<std::string, JsonLines> key, Reading* r, const std::string& shown, int rank);
  void read_source(const Source& source);

  const CommandOutputs& o_;
  std::map<std::pair<std::string, int>, Source> sources_;
};

}  // namespace sweepbench
