#include "config/command_spec.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "config/parsers/parser.h"
#include "config/placeholders.h"
#include "config/schema.h"
#include "text/text.h"
#include "text/user_regex.h"

namespace sweepbench {
namespace fs = std::filesystem;
namespace {

// Columns bench-extract fills itself (postprocess/point_columns.cc extract_columns, table_ops.cc
// group_repeats); a metric cannot take their place. Metrics bench-train and bench-infer report
// are not here: a command's metric of such a name shares their column, on purpose.
const std::set<std::string> kReservedNames = {"sweep",
                                              "tag",
                                              "index",
                                              "scenario",
                                              "repeat",
                                              "status",
                                              "reason",
                                              "world_size",
                                              "device",
                                              "units",
                                              "params",
                                              "benchmark",
                                              "exit_code",
                                              "seconds",
                                              "repeats",
                                              "profile_trace",
                                              "cost_usd_per_mtok",
                                              "mem_torch_mem_alloc_in_bytes",
                                              "mem_peak_torch_mem_alloc_in_bytes",
                                              "mem_nvidia_mem_reserved",
                                              "cpu_percent_mean",
                                              "ram_peak_mb"};

const Mark& mark_of(const Value& v, const Mark& fallback) {
  return v.mark().known() ? v.mark() : fallback;
}

// Every {placeholder} of the texts must be a config key or one of `runtime`; the error names all
// unknown ones, at the first text that has one.
void check_placeholders(const std::vector<std::pair<std::string, Mark>>& texts,
                        const std::string& key, const std::vector<std::string>& runtime) {
  std::set<std::string> unknown;
  std::optional<Mark> mark;
  for (const auto& [text, at] : texts) {
    for (const std::string& name : placeholder_names(parse_placeholders(text, at, key))) {
      if (std::find(runtime.begin(), runtime.end(), name) != runtime.end()) continue;
      if (is_config_placeholder(name)) continue;
      unknown.insert(name);
      if (!mark) mark = at;
    }
  }
  if (unknown.empty()) return;
  std::string allowed = runtime.empty() ? "" : join(runtime, ", ") + ", ";
  throw unknown_placeholders(unknown, *mark, key,
                             "a placeholder is " + allowed +
                                 "or a config key such as params.NAME or train.micro_batch "
                                 "(write {{ and }} for literal braces)");
}

void check_placeholders(const std::string& text, const Mark& mark, const std::string& key,
                        const std::vector<std::string>& runtime) {
  check_placeholders({{text, mark}}, key, runtime);
}

// A placeholder naming an entry of a map key (params.threads, launch.env.X) that this point does
// not set would become an empty argument without a word (`{params.thread}` for
// `params.threads`, and llama-bench ran with its default): refused, with the nearest entry the
// point does set. An entry set to null or '' on purpose is set.
void require_set_entries(const std::vector<std::pair<std::string, Mark>>& texts,
                         const std::string& key, const Value& resolved) {
  for (const auto& [text, at] : texts) {
    for (const std::string& name : placeholder_names(parse_placeholders(text, at, key))) {
      Schema::Lookup found = Schema::get().lookup(name);
      if (found.kind != Schema::Lookup::Kind::kMapEntry) continue;
      if (resolved.find_path(name) != nullptr) continue;
      const std::string& map = found.spec->path;
      std::vector<std::string> set;
      if (const Value* m = resolved.find_path(map); m != nullptr && m->is_map()) {
        for (const Value::Entry& e : m->entries()) set.push_back(map + "." + e.key);
      }
      std::optional<std::string> near = closest_match(name, set);
      throw Error::input(at, key,
                         "placeholder {" + name + "} is not set" +
                             (near ? " (did you mean '" + *near + "'?)" : ""),
                         (set.empty() ? "the point sets no " + map + " entries"
                                      : "the point sets " + join(set, ", ")) +
                             "; set " + name +
                             " in base or an axis, or to '' where an empty value is meant");
    }
  }
}

// RE2, as bench-command will compile it; returns its number of capture groups.
size_t check_regex(const std::string& re, const Mark& mark, const std::string& key) {
  return static_cast<size_t>(UserRegex(re, mark, key).groups());
}

MetricReduce parse_reduce(const Value& v, const std::string& key) {
  static const std::vector<std::pair<std::string, MetricReduce>> names = {
      {"last", MetricReduce::kLast},   {"first", MetricReduce::kFirst},
      {"mean", MetricReduce::kMean},   {"min", MetricReduce::kMin},
      {"max", MetricReduce::kMax},     {"sum", MetricReduce::kSum},
      {"count", MetricReduce::kCount}, {"all", MetricReduce::kAll}};
  if (v.is_string()) {
    for (const auto& [name, r] : names) {
      if (name == v.as_string()) return r;
    }
  }
  throw Error::input(v.mark(), key, v.describe() + " is not a reduction",
                     "use last, first, mean, min, max, sum, count or all");
}

MetricSpec parse_metric(const Value& item, size_t index, const Mark& list_mark) {
  const Mark& mark = mark_of(item, list_mark);
  const std::string key = "command.metrics[" + std::to_string(index) + "]";
  MetricSpec m;
  m.mark = mark;
  static const std::set<std::string> known = {"name",   "unit",    "from",     "regex", "group",
                                              "reduce", "pointer", "optional", "where", "type"};
  for (const Value::Entry& e : item.entries()) {
    if (known.count(e.key) == 0) {
      std::vector<std::string> names(known.begin(), known.end());
      std::optional<std::string> near = closest_match(e.key, names);
      throw Error::input(
          mark_of(e.value, e.key_mark.known() ? e.key_mark : mark), key,
          "unknown field '" + e.key + "'" + (near ? " (did you mean '" + *near + "'?)" : ""),
          "a metric has name, unit, from, regex, group, reduce, pointer, optional, where, "
          "type");
    }
  }
  auto text = [&](const char* field, bool needed) -> std::optional<std::string> {
    const Value* v = item.find(field);
    if (v == nullptr || v->is_null()) {
      if (needed) throw Error::input(mark, key, "has no " + std::string(field));
      return std::nullopt;
    }
    if (!v->is_string()) {
      throw Error::input(mark_of(*v, mark), key + "." + field,
                         "expected a string, got " + v->describe(), "quote it");
    }
    if (v->as_string().find('\0') != std::string::npos) {
      throw Error::input(mark_of(*v, mark), key + "." + field, "contains a NUL character");
    }
    return v->as_string();
  };
  m.name = *text("name", true);
  if (!is_identifier(m.name)) {
    throw Error::input(mark, key + ".name", "'" + m.name + "' is not a metric name",
                       "use letters, digits and _, not starting with a digit: it is a column");
  }
  // --group-repeats adds NAME_std beside each metric NAME.
  if (m.name.size() > 4 && m.name.compare(m.name.size() - 4, 4, "_std") == 0) {
    throw Error::input(mark, key + ".name",
                       "'" + m.name +
                           "' ends in _std, which bench-extract --group-repeats gives "
                           "each metric's standard deviation",
                       "choose another name");
  }
  if (kReservedNames.count(m.name)) {
    throw Error::input(mark, key + ".name",
                       "'" + m.name + "' is a column bench-extract fills itself",
                       "choose another name");
  }
  m.unit = text("unit", false).value_or("");
  std::string from = text("from", false).value_or("stdout");
  std::optional<std::string> pointer = text("pointer", false);
  std::optional<std::string> regex = text("regex", false);
  const bool stream = from == "stdout" || from == "stderr" || from == "output";
  if (starts_with(from, "json ") || (pointer && !stream)) {
    m.source = MetricSource::kJson;
    m.file = starts_with(from, "json ") ? trim(from.substr(5)) : from;
  } else if (pointer) {
    m.source = MetricSource::kJson;  // JSON lines in the program's output
    m.file = from;
  } else if (from == "stdout") {
    m.source = MetricSource::kStdout;
  } else if (from == "stderr") {
    m.source = MetricSource::kStderr;
  } else if (from == "output") {
    m.source = MetricSource::kOutput;
  } else {
    m.source = MetricSource::kFile;
    m.file = from;
  }
  if (m.file.empty() && (m.source == MetricSource::kFile || m.source == MetricSource::kJson)) {
    throw Error::input(mark, key + ".from", "names no file",
                       "write from: stdout, stderr, output, FILE or json FILE");
  }
  if (!m.file.empty()) {
    check_placeholders(m.file, mark, key + ".from", command_runtime_placeholders());
  }
  if (const Value* r = item.find("reduce"); r != nullptr && !r->is_null()) {
    m.reduce = parse_reduce(*r, key + ".reduce");
  }
  if (std::optional<std::string> type = text("type", false); type && *type != "number") {
    if (*type != "text") {
      throw Error::input(mark_of(*item.find("type"), mark), key + ".type",
                         "'" + *type + "' is not a metric type",
                         "use number (the default) or text");
    }
    m.text = true;
    if (m.reduce != MetricReduce::kLast && m.reduce != MetricReduce::kFirst) {
      throw Error::input(
          mark_of(*item.find("reduce"), mark), key + ".reduce",
          "a text metric keeps one value, so " + to_string(m.reduce) + " does not apply",
          "use reduce: last (the default) or first");
    }
  }
  if (const Value* o = item.find("optional"); o != nullptr && !o->is_null()) {
    if (!o->is_bool()) {
      throw Error::input(mark_of(*o, mark), key + ".optional",
                         "expected a boolean, got " + o->describe());
    }
    m.required = !o->as_bool();
  }
  const Value* group = item.find("group");
  if (m.source == MetricSource::kJson) {
    if (!pointer) {
      throw Error::input(mark, key, "reads JSON but has no pointer",
                         "add pointer: /a/b (RFC 6901; * for every item)");
    }
    if (pointer->empty() == false && (*pointer)[0] != '/') {
      throw Error::input(mark, key + ".pointer", "'" + *pointer + "' does not start with '/'",
                         "write a JSON pointer such as /train_runtime");
    }
    if (const Value* where = item.find("where"); where != nullptr && !where->is_null()) {
      if (!where->is_map()) {
        throw Error::input(mark_of(*where, mark), key + ".where",
                           "expected a mapping of member names to values, got " + where->describe(),
                           "e.g. where: {n_gen: 0}");
      }
      for (const Value::Entry& e : where->entries()) {
        if (!e.value.is_scalar() || e.value.is_null()) {
          throw Error::input(mark_of(e.value, mark), key + ".where." + e.key,
                             "expected a number, string or boolean, got " + e.value.describe());
        }
        m.where.emplace_back(e.key, e.value);
      }
    }
    if (regex || (group != nullptr && !group->is_null())) {
      throw Error::input(mark, key, "reads JSON with a pointer; regex and group do not apply",
                         "leave regex and group out, or read the file as text");
    }
    m.pointer = *pointer;
    return m;
  }
  if (const Value* where = item.find("where"); where != nullptr && !where->is_null()) {
    throw Error::input(mark, key + ".where", "applies to JSON records only",
                       "add a pointer, or leave where out");
  }
  if (!regex) {
    throw Error::input(mark, key, "has no regex",
                       "add regex: with a capture group around the number, e.g. 'loss ([0-9.]+)'");
  }
  m.regex = *regex;
  size_t groups = check_regex(m.regex, mark, key + ".regex");
  m.group = groups > 0 ? 1 : 0;
  if (group != nullptr && !group->is_null()) {
    if (!group->is_int() || group->as_int() < 0) {
      throw Error::input(mark_of(*group, mark), key + ".group",
                         "expected an integer >= 0, got " + group->describe());
    }
    if (static_cast<size_t>(group->as_int()) > groups) {
      throw Error::input(mark_of(*group, mark), key + ".group",
                         "the regex has " + plural(groups, "capture group") + ", not " +
                             std::to_string(group->as_int()));
    }
    m.group = static_cast<int>(group->as_int());
  }
  return m;
}

}  // namespace

const std::vector<std::string>& default_oom_patterns() {
  static const std::vector<std::string> patterns = {
      "CUDA out of memory",                              // torch.cuda.OutOfMemoryError's message
      "OutOfMemoryError",                                // its type, and torch.OutOfMemoryError
      "HIP out of memory",                               // ROCm
      "DefaultCPUAllocator: (can't|not enough memory)",  // PyTorch on the host
      "CUBLAS_STATUS_ALLOC_FAILED",
      "CUDNN_STATUS_(NOT_SUPPORTED|ALLOC_FAILED).*memory",
      "cudaErrorMemoryAllocation",
      "std::bad_alloc",
      "MemoryError",  // Python's own
  };
  return patterns;
}

const std::vector<std::string>& command_runtime_placeholders() {
  static const std::vector<std::string> names = {"out", "rank", "local_rank", "world_size"};
  return names;
}

std::vector<MetricSpec> parser_metrics(const std::string& parser) {
  const Parser* p = find_parser(parser);
  return p != nullptr ? p->metrics() : std::vector<MetricSpec>{};
}

namespace {

// SECTION.argv, SECTION.env and SECTION.workdir (the command section's, or a serve point's
// server's) into `spec`, their placeholders checked against `runtime` and the config.
void read_program(const Value& resolved, const std::string& section,
                  const std::vector<std::string>& runtime, const std::string& argv_hint,
                  CommandSpec& spec) {
  const std::string argv_key = section + ".argv";
  const Value& argv = config_at(resolved, argv_key);
  if (argv.items().empty()) {
    throw Error::input(argv.mark(), argv_key, "is empty, but benchmark is " + section, argv_hint);
  }
  std::vector<std::pair<std::string, Mark>> texts;
  for (const Value& a : argv.items()) {
    texts.emplace_back(a.as_string(), mark_of(a, argv.mark()));
    spec.argv.push_back(a.as_string());
  }
  check_placeholders(texts, argv_key, runtime);
  require_set_entries(texts, argv_key, resolved);
  if (spec.argv.front().empty()) {
    throw Error::input(argv.mark(), argv_key, "its first item (the program) is empty");
  }
  for (const Value::Entry& e : config_at(resolved, section + ".env").entries()) {
    const std::string key = section + ".env." + e.key;
    check_placeholders(e.value.as_string(), mark_of(e.value, e.key_mark), key, runtime);
    require_set_entries({{e.value.as_string(), mark_of(e.value, e.key_mark)}}, key, resolved);
    spec.env[e.key] = e.value.as_string();
  }
  const std::string workdir_key = section + ".workdir";
  const Value& workdir = config_at(resolved, workdir_key);
  if (!workdir.is_null()) {
    check_placeholders(workdir.as_string(), workdir.mark(), workdir_key, runtime);
    require_set_entries({{workdir.as_string(), workdir.mark()}}, workdir_key, resolved);
    spec.workdir = workdir.as_string();
  }
}

}  // namespace

CommandSpec command_spec_of(const Value& resolved) {
  CommandSpec spec;
  const std::vector<std::string>& runtime = command_runtime_placeholders();
  // launch.setup runs before any rank exists: only the point directory and config keys.
  std::vector<std::pair<std::string, Mark>> lines;
  for (const Value& line : config_at(resolved, "launch.setup").items()) {
    lines.emplace_back(line.as_string(), line.mark());
  }
  check_placeholders(lines, "launch.setup", {"out"});
  require_set_entries(lines, "launch.setup", resolved);
  if (config_at(resolved, "benchmark").as_string() != "command") return spec;

  read_program(resolved, "command", runtime,
               "give the program and its arguments, e.g. [python3, train.py, --lr, "
               "'{params.lr}']",
               spec);
  spec.parser = config_at(resolved, "command.parser").as_string();
  spec.metrics = parser_metrics(spec.parser);
  const Value& metrics = config_at(resolved, "command.metrics");
  for (size_t i = 0; i < metrics.items().size(); ++i) {
    MetricSpec m = parse_metric(metrics.items()[i], i, metrics.mark());
    if (!m.file.empty()) {
      require_set_entries({{m.file, m.mark}}, "command.metrics[" + std::to_string(i) + "].from",
                          resolved);
    }
    // A metric of the parser's name replaces the parser's (its regex, unit, optional).
    auto same = std::find_if(spec.metrics.begin(), spec.metrics.end(),
                             [&](const MetricSpec& o) { return o.name == m.name; });
    if (same != spec.metrics.end() && !same->parser.empty()) {
      *same = m;
    } else if (same != spec.metrics.end()) {
      throw Error::input(m.mark, "command.metrics", "two metrics are named '" + m.name + "'",
                         "rename one of them");
    } else {
      spec.metrics.push_back(m);
    }
  }
  auto patterns = [&](const char* key, std::vector<std::string>* out) {
    const Value& list = config_at(resolved, key);
    for (const Value& p : list.items()) {
      check_regex(p.as_string(), mark_of(p, list.mark()), key);
      out->push_back(p.as_string());
    }
  };
  patterns("command.success.match", &spec.match);
  patterns("command.success.fail", &spec.fail);
  patterns("command.oom_patterns", &spec.oom_patterns);
  if (spec.oom_patterns.empty()) spec.oom_patterns = default_oom_patterns();
  const Value& code = config_at(resolved, "command.success.exit_code");
  spec.exit_code = code.is_null() ? std::nullopt : std::optional<std::int64_t>(code.as_int());
  const Value& required = config_at(resolved, "command.success.required");
  if (!required.is_null()) {
    std::set<std::string> names;
    for (const Value& r : required.items()) {
      auto it = std::find_if(spec.metrics.begin(), spec.metrics.end(),
                             [&](const MetricSpec& m) { return m.name == r.as_string(); });
      if (it == spec.metrics.end()) {
        std::vector<std::string> known;
        for (const MetricSpec& m : spec.metrics) known.push_back(m.name);
        std::optional<std::string> near = closest_match(r.as_string(), known);
        throw Error::input(
            mark_of(r, required.mark()), "command.success.required",
            "no metric is named '" + r.as_string() + "'" +
                (near ? " (did you mean '" + *near + "'?)" : ""),
            known.empty() ? "define it in command.metrics" : "metrics: " + join(known, ", "));
      }
      names.insert(r.as_string());
    }
    for (MetricSpec& m : spec.metrics) m.required = names.count(m.name) > 0;
  }
  return spec;
}

CommandSpec server_command_of(const Value& resolved) {
  CommandSpec spec;
  if (config_at(resolved, "benchmark").as_string() != "serve") return spec;
  // The command section's placeholders, and where the server listens.
  std::vector<std::string> runtime = command_runtime_placeholders();
  runtime.insert(runtime.end(), {"port", "host"});
  read_program(resolved, "serve", runtime,
               "give the server's command, e.g. [vllm, serve, MODEL, --port, '{port}']", spec);
  return spec;
}

std::string glob_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string expand_command_text(const std::string& text, const Value& resolved,
                                const RuntimeValues& values, const std::string& key,
                                const std::function<std::string(const std::string&)>& escape) {
  auto value_of = [&](const std::string& name) -> std::string {
    if (name == "out") return values.out;
    if (name == "rank") return std::to_string(values.rank);
    if (name == "local_rank") return std::to_string(values.local_rank);
    if (name == "world_size") return std::to_string(values.world_size);
    if (name == "port" && values.port > 0) return std::to_string(values.port);
    if (name == "host" && !values.host.empty()) return values.host;
    const Value* v = placeholder_config_value(resolved, name);
    if (v == nullptr) {
      // command_spec_of checked every name; only a caller's own text can get here.
      throw unknown_placeholders({name}, Mark::in(key), key, "see docs/commands.md");
    }
    return placeholder_text(*v);
  };
  return render_placeholders(
      parse_placeholders(text, Mark::in(key), key),
      [&](const std::string& name) { return escape ? escape(value_of(name)) : value_of(name); });
}

ExpandedCommand expand_command(const CommandSpec& spec, const Value& resolved,
                               const RuntimeValues& values) {
  ExpandedCommand cmd;
  for (const std::string& a : spec.argv) {
    cmd.argv.push_back(expand_command_text(a, resolved, values, "command.argv"));
  }
  for (const auto& [name, value] : spec.env) {
    cmd.env[name] = expand_command_text(value, resolved, values, "command.env." + name);
  }
  // The default is the directory bench-sweep run started in (bench-command inherits it), so
  // relative paths in argv mean what they mean where the user typed the command.
  std::string cwd = fs::current_path().string();
  cmd.workdir =
      spec.workdir ? expand_command_text(*spec.workdir, resolved, values, "command.workdir") : cwd;
  if (!fs::path(cmd.workdir).is_absolute()) cmd.workdir = (fs::path(cwd) / cmd.workdir).string();
  return cmd;
}

}  // namespace sweepbench
