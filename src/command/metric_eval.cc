#include "command/metric_eval.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>

#include "command/json_reader.h"
#include "core/fs.h"
#include "core/parsers/parser.h"
#include "core/process.h"
#include "core/terminal.h"
#include "core/text.h"
#include "core/user_regex.h"
#include "core/yaml_io.h"
#include "results/summary.h"

namespace sweepbench {
namespace fs = std::filesystem;
namespace {

// A stop signal is honoured within a second in the reading phase too: once one has come, the
// program's output and the metrics' files are read for a second more in all, then no longer (a
// program that printed gigabytes takes many seconds; the point is cancelled or timed out anyway,
// and bench-sweep's second stop would kill us).
std::optional<std::chrono::steady_clock::time_point> g_stop_seen;
bool g_read_in_part = false;

// Says that a stop signal cut the reading of `path` (output_read_in_part()).
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

// Calls fn(line, number, cut) for each line of the file; '\r' ends a line too (progress bars
// redraw themselves with it, and a terminal shows each redraw as the line). A line longer than
// kMaxMatchedLine is given as its first kMaxMatchedLine bytes, with cut true. False: no such
// file. Throws Error(kIo) when the file is not a regular file (a FIFO, /dev/zero) or cannot be
// read: such a file never blocks or feeds the reader for ever.
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

// A metric's file under the point directory (unless absolute); `pattern`: as a glob pattern, in
// which only what the user wrote is special (the point directory and placeholders' values are
// escaped).
std::string path_in(const CommandOutputs& o, const std::string& file, bool pattern = false) {
  std::string expanded = pattern ? o.expand_pattern(file) : o.expand(file);
  fs::path p(expanded);
  if (p.is_absolute()) return expanded;
  return (fs::path(pattern ? glob_escape(o.point_dir) : o.point_dir) / p).string();
}

// A value a JSON pointer reached, and the object or list that holds it (for `where`).
struct Found {
  const Value* value;
  const Value* holder;
};

// A JSON pointer (RFC 6901) with '*' matching every item of a list or map.
void resolve_pointer(const Value& node, const std::vector<std::string>& tokens, size_t at,
                     const Value* holder, std::vector<Found>* out) {
  if (at == tokens.size()) {
    out->push_back({&node, holder});
    return;
  }
  const std::string& t = tokens[at];
  if (t == "*") {
    for (const Value& item : node.items()) resolve_pointer(item, tokens, at + 1, &node, out);
    for (const Value::Entry& e : node.entries()) {
      resolve_pointer(e.value, tokens, at + 1, &node, out);
    }
    return;
  }
  if (node.is_map()) {
    if (const Value* v = node.find(t)) resolve_pointer(*v, tokens, at + 1, &node, out);
  } else if (node.is_list()) {
    if (auto i = parse_int64(t); i && *i >= 0 && static_cast<size_t>(*i) < node.items().size()) {
      resolve_pointer(node.items()[static_cast<size_t>(*i)], tokens, at + 1, &node, out);
    } else if (at == 0) {
      // A list of records (llama-bench -o json) is read as its records, like JSON lines.
      for (const Value& item : node.items()) resolve_pointer(item, tokens, at, &node, out);
    }
  }
}

// `where`: the holder has each member, equal (numbers by value, else by type and text).
bool holder_matches(const Value* holder, const std::vector<std::pair<std::string, Value>>& where) {
  for (const auto& [name, want] : where) {
    const Value* have = holder != nullptr ? holder->find(name) : nullptr;
    if (have == nullptr) return false;
    if (have->is_number() && want.is_number()) {
      if (have->as_float() != want.as_float()) return false;
    } else if (!(*have == want)) {
      return false;
    }
  }
  return true;
}

std::vector<std::string> pointer_tokens(const std::string& pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) return tokens;
  size_t start = 1;
  while (true) {
    size_t slash = pointer.find('/', start);
    std::string t = pointer.substr(start, slash == std::string::npos ? slash : slash - start);
    std::string unescaped;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '~' && i + 1 < t.size() && (t[i + 1] == '0' || t[i + 1] == '1')) {
        unescaped += t[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        unescaped += t[i];
      }
    }
    tokens.push_back(unescaped);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return tokens;
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

// Values of one JSON document (or of each JSON line) at the pointer.
void json_values(const Value& doc, Reading* r) {
  const MetricSpec& spec = *r->spec;
  std::vector<Found> found;
  const std::vector<std::string> tokens = pointer_tokens(spec.pointer);
  resolve_pointer(doc, tokens, 0, nullptr, &found);
  if (!spec.where.empty() && tokens.size() == 1 && tokens[0] != "*") {
    // Records (one, or a list of them) that the metric selects but that lack its member.
    auto check = [&](const Value& record) {
      if (record.is_map() && holder_matches(&record, spec.where) &&
          record.find(tokens[0]) == nullptr) {
        ++r->records_without;
      }
    };
    if (doc.is_list()) {
      for (const Value& item : doc.items()) check(item);
    } else {
      check(doc);
    }
  }
  for (const Found& f : found) {
    if (!holder_matches(f.holder, spec.where)) continue;
    const Value* v = f.value;
    if (spec.text) {
      if (v->is_string()) {
        r->add_text(v->as_string());
      } else if (v->is_number() || v->is_bool()) {
        r->add_text(emit_json(*v, 0));
      } else if (!v->is_null() && r->m.problem.empty()) {
        r->m.problem = spec.pointer + " is " + v->describe() + ", not text";
      }
    } else if (spec.reduce == MetricReduce::kCount) {
      r->add(1);  // what is there counts, number or not
    } else if (v->is_number()) {
      r->add(v->as_float());
    } else if (v->is_bool()) {
      r->add(v->as_bool() ? 1 : 0);
    } else if (v->is_string() && number_of(v->as_string())) {
      r->add(*number_of(v->as_string()));
    } else if (r->m.problem.empty()) {
      r->m.problem = spec.pointer + " is " + v->describe() + ", not a number";
    }
  }
}

std::string salvaged_note(const std::string& source, size_t records) {
  return source + "'s JSON array is cut short: its " + plural(records, "complete record") +
         " were read";
}

// The files a metric names: its path, or every file its glob pattern matches, sorted. Only the
// pattern the user wrote is a pattern: what a placeholder put in it ({out} holding '[x]') is
// escaped first, so it stands for itself.
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

// What a JSON metric's pointer and `where` need of a document (json_reader.h): the pointer's
// members, and beside them (in the object that holds them) the members `where` compares.
void add_patterns(const MetricSpec& spec, JsonPatterns* patterns) {
  const std::vector<std::string> tokens = pointer_tokens(spec.pointer);
  patterns->add(tokens, true);
  if (spec.where.empty() || tokens.empty()) return;
  std::vector<std::string> holder(tokens.begin(), tokens.end() - 1);
  for (const auto& [name, want] : spec.where) {
    std::vector<std::string> member = holder;
    member.push_back(name);
    patterns->add(member, true);
  }
}

// The JSON metrics of a run, each file they read read once for all of them (a 1 MB file read
// by 40 metrics was parsed 40 times): every metric's files are listed first, then each file is
// read and its documents given to every metric that reads it.
class JsonMetrics {
 public:
  explicit JsonMetrics(const CommandOutputs& o) : o_(o) {}

  // Registers a JSON metric's reading (its files, in the order it reads them).
  void add(Reading* r) {
    const MetricSpec& spec = *r->spec;
    CommandMetric& m = r->m;
    if (spec.file == "stdout" || spec.file == "stderr" || spec.file == "output") {
      m.source = spec.file;
      if (spec.file != "stderr") use({o_.stdout_path, JsonLines::kAmongText}, r, spec.file, 0);
      if (spec.file != "stdout") use({o_.stderr_path, JsonLines::kAmongText}, r, spec.file, 1);
      return;
    }
    m.source = o_.expand(spec.file);
    std::vector<std::string> files = metric_files(o_, spec.file);
    if (files.empty()) {
      m.problem = "no file matches " + m.source;
      return;
    }
    // One file matched a pattern: its name says more than the pattern.
    if (files.size() == 1 && files.front() != path_in(o_, spec.file)) {
      m.source = fs::path(files.front()).lexically_relative(o_.point_dir).string();
    }
    for (const std::string& f : files) {
      std::string shown = files.size() == 1 && files.front() == path_in(o_, spec.file)
                              ? m.source
                              : fs::path(f).lexically_relative(o_.point_dir).string();
      use({f, JsonLines::kEveryLine}, r, shown, 2);
    }
  }

  // Reads every registered file once: the program's output first, then the metrics' files in
  // the order of their paths (each metric's own files are in that order).
  void read() {
    std::vector<const Source*> order;
    for (const auto& [key, source] : sources_) order.push_back(&source);
    std::sort(order.begin(), order.end(), [](const Source* a, const Source* b) {
      return std::tie(a->rank, a->path) < std::tie(b->rank, b->path);
    });
    for (const Source* source : order) read_source(*source);
  }

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

  void use(std::pair<std::string, JsonLines> key, Reading* r, const std::string& shown, int rank) {
    Source& s = sources_[{key.first, static_cast<int>(key.second)}];
    s.path = key.first;
    s.lines = key.second;
    s.rank = rank;
    s.uses.push_back({r, shown});
  }

  void read_source(const Source& source) {
    JsonPatterns patterns;
    for (const Use& u : source.uses) add_patterns(*u.reading->spec, &patterns);
    const bool output = source.lines == JsonLines::kAmongText;
    JsonFileRead got;
    std::string error;
    try {
      got = read_json_documents(
          source.path, patterns, source.lines,
          [&](const Value& doc) {
            for (const Use& u : source.uses) {
              if (!u.reading->json_done) json_values(doc, u.reading);
            }
          },
          reading_must_stop);
    } catch (const Error& e) {
      error = e.message();
    }
    if (got.stopped) note_read_in_part(source.path);
    for (const Use& u : source.uses) {
      Reading* r = u.reading;
      if (r->json_done) continue;
      CommandMetric& m = r->m;
      if (output) {
        if (!error.empty() || !got.problem.empty()) {
          m.problem =
              "the program's output cannot be read: " + (error.empty() ? got.problem : error);
        }
        if (got.salvaged > 0) r->salvaged = salvaged_note(r->spec->file, got.salvaged);
        continue;
      }
      if (!error.empty()) {
        m.problem = u.shown + " cannot be read: " + error;
      } else if (!got.exists) {
        m.problem = u.shown + " does not exist";
      } else if (!got.problem.empty()) {
        // Every line of a JSON-lines file must be one: what was read of it is dropped.
        m.problem = u.shown + " " + got.problem;
        r->clear();
      } else if (got.salvaged > 0) {
        r->salvaged = salvaged_note(u.shown, got.salvaged);
      }
      // A file that gave nothing but a problem ends the metric's reading of its files.
      if (!m.problem.empty() && m.values.empty()) r->json_done = true;
    }
  }

  const CommandOutputs& o_;
  std::map<std::pair<std::string, int>, Source> sources_;
};

// The first line of the run's output matching one of `patterns`: "stderr line 12: TEXT".
std::optional<std::string> first_match(const std::vector<std::string>& patterns,
                                       const CommandOutputs& o) {
  std::vector<UserRegex> res;
  for (const std::string& p : patterns) res.emplace_back(p, Mark(), "");
  std::optional<std::string> hit;
  // Not structured bindings: clang 14 (the fuzz preset) cannot capture them in a lambda.
  for (const std::pair<std::string, std::string>& source :
       {std::pair<std::string, std::string>{"stderr", o.stderr_path}, {"stdout", o.stdout_path}}) {
    const std::string& name = source.first;
    const std::string& path = source.second;
    try {
      for_each_line(path, [&](const std::string& line, size_t n, bool) {
        if (hit) return;
        for (const UserRegex& re : res) {
          if (re.search(line)) {
            hit = name + " line " + std::to_string(n) + ": " + first_line(trim(line), 200);
            return;
          }
        }
      });
    } catch (const Error&) {
      // An unreadable log matches nothing; read_metrics says why.
    }
    if (hit) break;
  }
  return hit;
}

// What a failed program said: the exception of the last Python traceback on its stderr (with
// up to two indented lines after it, where pydantic and others put the real message), else its
// last line. A traceback's last line is often a link ("For further information visit ...").
std::string program_error(const CommandOutputs& o) {
  std::string last, exception;
  bool in_traceback = false;
  int details = -1;  // >= 0: indented lines taken after the exception line
  try {
    for_each_line(o.stderr_path, [&](const std::string& line, size_t, bool) {
      std::string t = trim(line);
      if (t.empty() || is_help_pointer(t)) return;
      last = t;
      const bool indented = line[0] == ' ' || line[0] == '\t';
      if (t == "Traceback (most recent call last):") {
        in_traceback = true;
        details = -1;
        return;
      }
      if (in_traceback) {
        if (indented) return;  // a frame and its code
        in_traceback = false;
        exception = t;
        details = 0;
        return;
      }
      if (details >= 0) {
        if (!indented || details == 2) {
          details = -1;
        } else if (t.rfind("For further information", 0) != 0) {
          exception += " " + t;
          ++details;
        }
      }
    });
  } catch (const Error&) {
  }
  return first_line(exception.empty() ? last : exception, 300);
}


}  // namespace

std::vector<CommandMetric> read_metrics(const std::vector<MetricSpec>& specs,
                                        const CommandOutputs& o) {
  std::vector<Reading> readings(specs.size());
  // Text sources are read once each, every metric of the source matched against each line.
  std::map<std::string, std::vector<size_t>> by_text_source;  // path -> metrics
  std::set<std::string> unwrapped;  // text sources whose rich-wrapped lines are joined first
  std::vector<std::optional<UserRegex>> res(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const MetricSpec& s = specs[i];
    Reading& r = readings[i];
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
    if (s.source != MetricSource::kJson) res[i].emplace(s.regex, s.mark, "regex");
    if (s.rich_wrapped && (s.source == MetricSource::kOutput || s.source == MetricSource::kStdout ||
                           s.source == MetricSource::kStderr)) {
      if (s.source != MetricSource::kStderr) unwrapped.insert(o.stdout_path);
      if (s.source != MetricSource::kStdout) unwrapped.insert(o.stderr_path);
    }
  }
  for (const auto& source : by_text_source) {
    const std::string& path = source.first;
    const std::vector<size_t>& metrics = source.second;
    auto where_of = [&, p = path](size_t i) {
      return specs[i].source == MetricSource::kOutput ? (p == o.stdout_path ? "stdout" : "stderr")
                                                      : readings[i].m.source;
    };
    bool exists = true;
    try {
      exists = for_each_logical_line(path, unwrapped.count(path) != 0,
                                     [&](const std::string& line, size_t n, bool cut) {
        for (size_t i : metrics) {
          Reading& r = readings[i];
          if (cut && r.cut_line.empty()) r.cut_line = where_of(i) + " line " + std::to_string(n);
          const std::int64_t before = r.count;
          res[i]->for_each_match(line, specs[i].group, [&](std::string_view match) {
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
            r.near_line = where_of(i) + " line " + std::to_string(n) + ": " +
                          first_line(trim(line), 80);
          }
        }
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
  // read read once for all of them.
  std::vector<std::vector<Reading>> preferred(specs.size());
  JsonMetrics json(o);
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
    if (specs[i].source == MetricSource::kJson) json.add(&readings[i]);
  }
  json.read();
  std::vector<CommandMetric> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    Reading& r = readings[i];
    // A better source of the same figure that has it is read instead (fairseq2's JSON lines).
    for (Reading& b : preferred[i]) {
      if (b.count == 0) continue;
      r = std::move(b);
      r.spec = &specs[i];
      break;
    }
    CommandMetric& m = r.m;
    m.found = r.count > 0 || specs[i].reduce == MetricReduce::kCount;
    m.value = m.found ? r.reduced() : std::numeric_limits<double>::quiet_NaN();
    if (!m.found && m.problem.empty() && r.skipped > 0) {
      m.problem = "only " + plural(r.skipped, "value") + " read, and " +
                  (specs[i].skip == 1 ? std::string("the first is")
                                      : "the first " + std::to_string(specs[i].skip) + " are") +
                  " left out as the program's warm-up";
    }
    if (!m.found && m.problem.empty()) {
      // A parser's pattern is its own business: named, not spelled.
      std::string pattern = specs[i].parser.empty() ? specs[i].regex
                                                    : "the " + specs[i].parser + " parser's pattern";
      m.problem = specs[i].source == MetricSource::kJson
                      ? "nothing at " + specs[i].pointer + " in " + m.source
                      : "no line of " + m.source + " matches " + pattern;
      if (!r.near_line.empty()) m.problem += "; it is named on " + r.near_line;
    }
    if (!m.found && !r.cut_line.empty()) {
      m.problem += " (" + r.cut_line + " is longer than " +
                   std::to_string(kMaxMatchedLine >> 20) + " MiB: only its first MiB was read)";
    }
    if (specs[i].text) {
      m.is_text = true;
      m.value = std::numeric_limits<double>::quiet_NaN();
      m.text = specs[i].reduce == MetricReduce::kFirst ? r.first_text : r.last_text;
      if (m.found) m.problem.clear();
      if (r.text_cut) {
        m.problem =
            "a value longer than " + std::to_string(kMaxMetricText) + " bytes was cut there";
      }
    } else if (m.found && r.count > 0) {
      m.problem.clear();  // a value was read after all
      if (r.count > static_cast<std::int64_t>(kMaxKeptValues)) {
        m.problem = with_commas(static_cast<double>(r.count)) + " values read; the " + m.reduce +
                    " is of all of them; the first " +
                    with_commas(static_cast<double>(kMaxKeptValues)) + " are kept";
      }
    }
    if (!r.salvaged.empty()) m.problem = m.problem.empty() ? r.salvaged : m.problem + "; " + r.salvaged;
    if (r.records_without > 0) {
      std::string gap = plural(static_cast<size_t>(r.records_without), "record") + " of " +
                        m.source + " selected for it had no " + specs[i].pointer;
      m.problem = m.problem.empty() ? gap : m.problem + "; " + gap;
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<CommandMetric> llama_bench_tests(const CommandOutputs& o) {
  // Each record's test, named as llama-bench's own table names it: pp512, tg128, pp512+tg128,
  // and @d64 for a depth; its avg_ts, the mean over the records of one test.
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> by_test;
  auto take = [&](const Value& record) {
    if (!record.is_map()) return;
    const Value* ts = record.find("avg_ts");
    const Value* prompt = record.find("n_prompt");
    const Value* gen = record.find("n_gen");
    if (ts == nullptr || !ts->is_number() || prompt == nullptr || !prompt->is_int() ||
        gen == nullptr || !gen->is_int()) {
      return;
    }
    std::int64_t p = prompt->as_int(), g = gen->as_int();
    if (p <= 0 && g <= 0) return;
    std::string name = p > 0 && g > 0 ? "pp" + std::to_string(p) + "+tg" + std::to_string(g)
                       : p > 0        ? "pp" + std::to_string(p)
                                      : "tg" + std::to_string(g);
    if (const Value* depth = record.find("n_depth");
        depth != nullptr && depth->is_int() && depth->as_int() > 0) {
      name += "@d" + std::to_string(depth->as_int());
    }
    if (by_test.find(name) == by_test.end()) order.push_back(name);
    by_test[name].push_back(ts->as_float());
  };
  auto take_document = [&](const Value& doc) {
    if (doc.is_list()) {
      for (const Value& item : doc.items()) take(item);
    } else {
      take(doc);
    }
  };
  try {
    JsonPatterns patterns;
    for (const char* member : {"avg_ts", "n_prompt", "n_gen", "n_depth"}) {
      patterns.add({member}, true);
    }
    read_json_documents(o.stdout_path, patterns, JsonLines::kAmongText, take_document,
                        reading_must_stop);
  } catch (const Error&) {
    // Output that cannot be read has no tests; the parser's own metrics say why.
  }
  std::vector<CommandMetric> out;
  for (const std::string& name : order) {
    CommandMetric m;
    m.name = name;
    m.unit = "tokens/s";
    m.source = "stdout";
    m.reduce = "mean";
    m.found = true;
    m.values = by_test[name];
    m.value = mean(m.values);
    out.push_back(std::move(m));
  }
  return out;
}

bool output_read_in_part() { return g_read_in_part; }

CommandVerdict judge_command(const CommandSpec& spec, const CommandEnd& end,
                             const std::vector<CommandMetric>& metrics, const CommandOutputs& o) {
  const std::string what = end.term_signal != 0 ? "killed by " + signal_name(end.term_signal)
                                                : "exit code " + std::to_string(end.exit_code);
  if (end.stop_signal != 0) {
    bool time = end.stop_signal == SIGUSR1 || end.stop_signal == SIGTERM;
    return {time ? "timeout" : "cancelled",
            "bench-command received " + signal_name(end.stop_signal) +
                (time ? " (the time limit is near)"
                      : end.stop_signal == SIGUSR2 ? " (bench-sweep's stop)"
                                                   : "") +
                (end.stopped_while_reading
                     ? " while it read the program's output, whose metrics may be incomplete; "
                       "the program: " + what
                     : " and passed it on; the program: " + (end.started ? what : "never started"))};
  }
  if (!end.started) return {"failed", end.start_error};
  std::vector<std::string> problems;
  if (end.term_signal != 0) {
    std::string why = "the program was " + what;
    if (end.term_signal == SIGKILL) why += " (the kernel's out-of-memory killer, or a user)";
    problems.push_back(why);
  } else if (spec.exit_code && end.exit_code != *spec.exit_code) {
    std::string last = program_error(o);
    problems.push_back(
        "the program ended with " + what +
        (*spec.exit_code != 0 ? " (expected " + std::to_string(*spec.exit_code) + ")" : "") +
        (last.empty() ? "" : ": " + last));
  }
  for (const std::string& p : spec.fail) {
    if (auto hit = first_match({p}, o)) {
      problems.push_back("the fail pattern '" + p + "' matched " + *hit);
      break;
    }
  }
  for (const std::string& p : spec.match) {
    if (!first_match({p}, o)) {
      problems.push_back("the success pattern '" + p + "' matched no line of stdout or stderr");
      break;
    }
  }
  // The reason names every missing metric, and says why of the first (the others' are in the
  // point's log and rank file): four copies of a parser's pattern said nothing more.
  std::vector<std::string> missing;
  const CommandMetric* first_missing = nullptr;
  bool any = false;
  for (const CommandMetric& m : metrics) {
    any = any || m.found;
    if (m.required && !m.found) {
      missing.push_back(m.name);
      if (first_missing == nullptr) first_missing = &m;
    }
  }
  // A parser knows what its program must be told to write (llama-bench without -o jsonl said
  // only that nothing was found): said when none of the metrics was found.
  const Parser* parser = find_parser(spec.parser);
  const std::string hint =
      any || parser == nullptr || parser->ask.empty() ? std::string() : " (" + parser->ask + ")";
  if (!missing.empty()) {
    problems.push_back("required metric" + std::string(missing.size() > 1 ? "s" : "") +
                       " not found: " + join(missing, ", ") + " (" +
                       (missing.size() > 1 ? first_missing->name + ": " : "") +
                       first_missing->problem + ")" + hint);
  } else if (!metrics.empty() && !any) {
    problems.push_back("no metric was found in the program's output" + hint);
  }
  if (problems.empty()) return {"ok", ""};
  if (auto oom = first_match(spec.oom_patterns, o)) {
    return {"oom", "out of memory: " + *oom};
  }
  return {"failed", problems.front()};
}

}  // namespace sweepbench
