// metric_eval.h's JSON metrics: JSON pointers with '*' and `where`, a run's JSON metrics read
// with each file streamed once for all of them (JsonMetrics), and llama-bench's tests.
#include <algorithm>
#include <filesystem>
#include <tuple>

#include "command/metric_reading.h"
#include "config/yaml_io.h"
#include "metrics/summary.h"

namespace sweepbench {
namespace fs = std::filesystem;
namespace {

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

}  // namespace

void JsonMetrics::add(Reading* r) {
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

void JsonMetrics::read() {
  std::vector<const Source*> order;
  for (const auto& [key, source] : sources_) order.push_back(&source);
  std::sort(order.begin(), order.end(), [](const Source* a, const Source* b) {
    return std::tie(a->rank, a->path) < std::tie(b->rank, b->path);
  });
  for (const Source* source : order) read_source(*source);
}

void JsonMetrics::use(std::pair<std::string, JsonLines> key, Reading* r, const std::string& shown,
                      int rank) {
  Source& s = sources_[{key.first, static_cast<int>(key.second)}];
  s.path = key.first;
  s.lines = key.second;
  s.rank = rank;
  s.uses.push_back({r, shown});
}

void JsonMetrics::read_source(const Source& source) {
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
        m.problem = "the program's output cannot be read: " + (error.empty() ? got.problem : error);
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

}  // namespace sweepbench
