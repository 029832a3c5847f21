#include "command/metric_eval.h"

#include <glob.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <regex>

#include "core/fs.h"
#include "core/process.h"
#include "core/text.h"
#include "core/yaml_io.h"
#include "results/summary.h"

namespace sweepbench {
namespace fs = std::filesystem;
namespace {

// Calls fn(line, number) for each line of the file; '\r' ends a line too (progress bars redraw
// themselves with it, and a terminal shows each redraw as the line). False: no such file.
bool for_each_line(const std::string& path,
                   const std::function<void(const std::string&, size_t)>& fn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string line;
  size_t number = 1;
  char buf[1 << 16];
  auto emit = [&]() {
    fn(line, number++);
    line.clear();
  };
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    std::streamsize n = in.gcount();
    for (std::streamsize i = 0; i < n; ++i) {
      char c = buf[i];
      if (c == '\n' || c == '\r') {
        // "\r\n" is one end of line.
        if (c == '\n' && line.empty() && i > 0 && buf[i - 1] == '\r') continue;
        emit();
      } else if (line.size() < kMaxMatchedLine) {
        line += c;
      }
    }
  }
  if (!line.empty()) emit();
  return true;
}

std::string path_in(const CommandOutputs& o, const std::string& file) {
  std::string expanded = o.expand(file);
  fs::path p(expanded);
  return p.is_absolute() ? expanded : (fs::path(o.point_dir) / p).string();
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
    static const std::regex grouped(R"(-?[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?)");
    if (!std::regex_match(t, grouped)) return std::nullopt;
    t.erase(std::remove(t.begin(), t.end(), ','), t.end());
  }
  if (t == "nan" || t == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (t == "inf" || t == "Infinity") return std::numeric_limits<double>::infinity();
  if (t == "-inf" || t == "-Infinity") return -std::numeric_limits<double>::infinity();
  return parse_double(t);
}

// Values of one JSON document (or of each JSON line) at the pointer.
void json_values(const Value& doc, const MetricSpec& spec, CommandMetric* m) {
  std::vector<Found> found;
  resolve_pointer(doc, pointer_tokens(spec.pointer), 0, nullptr, &found);
  for (const Found& f : found) {
    if (!holder_matches(f.holder, spec.where)) continue;
    const Value* v = f.value;
    if (spec.reduce == MetricReduce::kCount) {
      m->values.push_back(1);  // what is there counts, number or not
    } else if (v->is_number()) {
      m->values.push_back(v->as_float());
    } else if (v->is_bool()) {
      m->values.push_back(v->as_bool() ? 1 : 0);
    } else if (v->is_string() && number_of(v->as_string())) {
      m->values.push_back(*number_of(v->as_string()));
    } else if (m->problem.empty()) {
      m->problem = spec.pointer + " is " + v->describe() + ", not a number";
    }
  }
}

// The program's output as JSON: one document (llama-bench -o json), else every line that parses
// as a JSON object or list (JSON lines among other output).
void read_json_stream(const std::string& path, const MetricSpec& spec, CommandMetric* m) {
  try {
    if (std::optional<std::string> text = read_file_if_exists(path)) {
      std::string t = trim(*text);
      if (!t.empty() && (t[0] == '{' || t[0] == '[')) {
        json_values(parse_yaml(t, spec.file), spec, m);
        return;
      }
    }
  } catch (const Error&) {
    // Not one document: read line by line.
  }
  for_each_line(path, [&](const std::string& line, size_t) {
    std::string t = trim(line);
    if (t.empty() || (t[0] != '{' && t[0] != '[')) return;
    try {
      json_values(parse_yaml(t, spec.file), spec, m);
    } catch (const Error&) {
      // Not JSON after all (a Python dict, say): not a record.
    }
  });
}

// The files a metric names: its path, or every file its glob pattern matches, sorted.
std::vector<std::string> metric_files(const CommandOutputs& o, const std::string& file) {
  std::string path = path_in(o, file);
  if (path.find_first_of("*?[") == std::string::npos) return {path};
  std::vector<std::string> files;
  glob_t g{};
  if (::glob(path.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) files.push_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  return files;
}

void read_json_file(const std::string& path, const std::string& shown, const MetricSpec& spec,
                    CommandMetric* m) {
  std::optional<std::string> text;
  try {
    text = read_file_if_exists(path);
  } catch (const Error& e) {
    m->problem = shown + " cannot be read: " + e.message();
    return;
  }
  if (!text) {
    m->problem = shown + " does not exist";
    return;
  }
  try {
    json_values(parse_yaml(*text, shown), spec, m);
    return;
  } catch (const Error&) {
  }
  // JSON lines: one document per line.
  size_t line_number = 0;
  for (size_t start = 0; start < text->size();) {
    size_t end = text->find('\n', start);
    std::string line = trim(text->substr(start, end == std::string::npos ? end : end - start));
    ++line_number;
    start = end == std::string::npos ? text->size() : end + 1;
    if (line.empty()) continue;
    try {
      json_values(parse_yaml(line, shown), spec, m);
    } catch (const Error&) {
      m->problem = shown + " line " + std::to_string(line_number) + " is not JSON";
      m->values.clear();
      return;
    }
  }
}

void read_json_metric(const MetricSpec& spec, const CommandOutputs& o, CommandMetric* m) {
  if (spec.file == "stdout" || spec.file == "stderr" || spec.file == "output") {
    m->source = spec.file;
    if (spec.file != "stderr") read_json_stream(o.stdout_path, spec, m);
    if (spec.file != "stdout") read_json_stream(o.stderr_path, spec, m);
    return;
  }
  m->source = o.expand(spec.file);
  std::vector<std::string> files = metric_files(o, spec.file);
  if (files.empty()) {
    m->problem = "no file matches " + m->source;
    return;
  }
  for (const std::string& f : files) {
    std::string shown = files.size() == 1 && files.front() == path_in(o, spec.file)
                            ? m->source
                            : fs::path(f).lexically_relative(o.point_dir).string();
    read_json_file(f, shown, spec, m);
    if (!m->problem.empty() && m->values.empty()) return;
  }
}

double reduce(MetricReduce r, const std::vector<double>& v) {
  switch (r) {
    case MetricReduce::kLast:
    case MetricReduce::kAll:
      return v.back();
    case MetricReduce::kFirst:
      return v.front();
    case MetricReduce::kMean:
      return mean(v);
    case MetricReduce::kMin:
      return *std::min_element(v.begin(), v.end());
    case MetricReduce::kMax:
      return *std::max_element(v.begin(), v.end());
    case MetricReduce::kSum: {
      double s = 0;
      for (double x : v) s += x;
      return s;
    }
    case MetricReduce::kCount:
      return static_cast<double>(v.size());
  }
  return 0;
}

// The first line of the run's output matching one of `patterns`: "stderr line 12: TEXT".
std::optional<std::string> first_match(const std::vector<std::string>& patterns,
                                       const CommandOutputs& o) {
  std::vector<std::regex> res;
  for (const std::string& p : patterns) res.emplace_back(p, std::regex::ECMAScript);
  std::optional<std::string> hit;
  for (const auto& [name, path] :
       {std::pair<std::string, std::string>{"stderr", o.stderr_path}, {"stdout", o.stdout_path}}) {
    for_each_line(path, [&](const std::string& line, size_t n) {
      if (hit) return;
      for (const std::regex& re : res) {
        if (std::regex_search(line, re)) {
          hit = name + " line " + std::to_string(n) + ": " + first_line(trim(line), 200);
          return;
        }
      }
    });
    if (hit) break;
  }
  return hit;
}

std::string last_stderr_line(const CommandOutputs& o) {
  std::string last;
  for_each_line(o.stderr_path, [&](const std::string& line, size_t) {
    if (!trim(line).empty()) last = trim(line);
  });
  return first_line(last, 300);
}

}  // namespace

std::vector<CommandMetric> read_metrics(const std::vector<MetricSpec>& specs,
                                        const CommandOutputs& o) {
  std::vector<CommandMetric> out;
  // Text sources are read once each, every metric of the source matched against each line.
  std::map<std::string, std::vector<size_t>> by_text_source;  // path -> metrics
  std::vector<std::regex> res(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const MetricSpec& s = specs[i];
    CommandMetric m;
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
    if (s.source != MetricSource::kJson) res[i] = std::regex(s.regex, std::regex::ECMAScript);
    out.push_back(std::move(m));
  }
  for (const auto& [path, metrics] : by_text_source) {
    bool exists = for_each_line(path, [&](const std::string& line, size_t n) {
      for (size_t i : metrics) {
        for (auto it = std::sregex_iterator(line.begin(), line.end(), res[i]);
             it != std::sregex_iterator(); ++it) {
          std::string text = (*it)[static_cast<size_t>(specs[i].group)].str();
          if (specs[i].reduce == MetricReduce::kCount) {
            out[i].values.push_back(static_cast<double>(n));  // a count's values: line numbers
          } else if (std::optional<double> v = number_of(text)) {
            out[i].values.push_back(*v);
          } else if (out[i].problem.empty()) {
            std::string where = specs[i].source == MetricSource::kOutput
                                    ? (path == o.stdout_path ? "stdout" : "stderr")
                                    : out[i].source;
            out[i].problem = "'" + first_line(text, 60) + "' (" + where + " line " +
                             std::to_string(n) + ") is not a number";
          }
        }
      }
    });
    if (!exists) {
      for (size_t i : metrics) {
        if (out[i].problem.empty()) out[i].problem = out[i].source + " does not exist";
      }
    }
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].source == MetricSource::kJson) read_json_metric(specs[i], o, &out[i]);
    CommandMetric& m = out[i];
    m.found = !m.values.empty() || specs[i].reduce == MetricReduce::kCount;
    m.value =
        m.found ? reduce(specs[i].reduce, m.values) : std::numeric_limits<double>::quiet_NaN();
    if (!m.found && m.problem.empty()) {
      m.problem = specs[i].source == MetricSource::kJson
                      ? "nothing at " + specs[i].pointer + " in " + m.source
                      : "no line of " + m.source + " matches " + specs[i].regex;
    }
    if (m.found && !m.values.empty()) m.problem.clear();  // a value was read after all
  }
  return out;
}

CommandVerdict judge_command(const CommandSpec& spec, const CommandEnd& end,
                             const std::vector<CommandMetric>& metrics, const CommandOutputs& o) {
  const std::string what = end.term_signal != 0 ? "killed by " + signal_name(end.term_signal)
                                                : "exit code " + std::to_string(end.exit_code);
  if (end.stop_signal != 0) {
    bool time = end.stop_signal == SIGUSR1 || end.stop_signal == SIGTERM;
    return {time ? "timeout" : "cancelled",
            "bench-command received " + signal_name(end.stop_signal) +
                (time ? " (the time limit is near)" : "") +
                " and passed it on; the program: " + (end.started ? what : "never started")};
  }
  if (!end.started) return {"failed", end.start_error};
  std::vector<std::string> problems;
  if (end.term_signal != 0) {
    std::string why = "the program was " + what;
    if (end.term_signal == SIGKILL) why += " (the kernel's out-of-memory killer, or a user)";
    problems.push_back(why);
  } else if (spec.exit_code && end.exit_code != *spec.exit_code) {
    std::string last = last_stderr_line(o);
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
  std::vector<std::string> missing;
  bool any = false;
  for (const CommandMetric& m : metrics) {
    any = any || m.found;
    if (m.required && !m.found) missing.push_back(m.name + " (" + m.problem + ")");
  }
  if (!missing.empty()) {
    problems.push_back("required metric" + std::string(missing.size() > 1 ? "s" : "") +
                       " not found: " + join(missing, "; "));
  } else if (!metrics.empty() && !any) {
    problems.push_back("no metric was found in the program's output");
  }
  if (problems.empty()) return {"ok", ""};
  if (auto oom = first_match(spec.oom_patterns, o)) {
    return {"oom", "out of memory: " + *oom};
  }
  return {"failed", problems.front()};
}

}  // namespace sweepbench
