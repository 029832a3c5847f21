// A resolved config's canonical text and config_hash (config_hash.h).
#include "config/config_hash.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/json_text.h"
#include "config/schema.h"
#include "config/yaml_io.h"
#include "text/digest.h"
#include "text/text.h"

namespace sweepbench {

namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

// What decides which keys the canonical text leaves out, from the schema, once: keys of another
// workload; unhashed keys; keys added later (hashed_unless_default) while at their default; and
// a section whose every key is left out for one of the first or the last reason, whole.
struct HashRules {
  std::vector<const KeySpec*> keys;                              // schema order
  std::unordered_map<std::string, std::vector<size_t>> by_path;  // path -> keys
  std::vector<std::string> sections;                             // "train", from the keys
  std::vector<size_t> section_of;                                // by key; kNone: top level
  std::vector<std::string> later_paths;                          // hashed_unless_default keys
};

const HashRules& hash_rules() {
  static const HashRules rules = [] {
    HashRules r;
    for (const KeySpec& k : Schema::get().keys()) {
      r.by_path[k.path].push_back(r.keys.size());
      r.keys.push_back(&k);
      std::string section = k.section();
      size_t s = kNone;
      if (!section.empty()) {
        s = static_cast<size_t>(std::find(r.sections.begin(), r.sections.end(), section) -
                                r.sections.begin());
        if (s == r.sections.size()) r.sections.push_back(section);
      }
      r.section_of.push_back(s);
      if (k.hashed_unless_default) r.later_paths.push_back(k.path);
    }
    return r;
  }();
  return rules;
}

bool is_block(const Value& v) { return v.is_map() && !v.entries().empty(); }

}  // namespace

// The configs' layout as last seen: their top-level entries in order, each one line or a section
// (a non-empty map: its `key:` line, then a line per entry), every line with its value and text
// as last written and whether the text leaves it out.
struct CanonicalConfigText::Layout {
  struct Line {
    std::string key;
    Value value;               // as last written (a section's: none, its lines hold it)
    std::string text;          // its canonical YAML
    std::vector<size_t> keys;  // the schema keys of its path: they may leave it out
    bool holds_later = false;  // a hashed_unless_default key lies in it
    bool skipped = false;

    // Takes `v`, writing it if it changed. True when that may change what is left out.
    bool take(const Value& v, int indent) {
      if (written_alike(v, value)) return false;
      value = v;
      text.clear();
      append_canonical_yaml_entry(text, key, value, indent);
      return holds_later;
    }
  };
  struct Top {
    Line line;
    bool block = false;
    std::string header;  // the key as written
    size_t section = kNone;
    std::vector<Line> children;  // block: entry order
    std::vector<size_t> sorted;  // block: children by key
  };
  std::vector<Top> tops;       // entry order
  std::vector<size_t> sorted;  // tops by key
  bool had_benchmark = false;
  std::string benchmark;  // as the flags were set

  explicit Layout(const Value& resolved);
  static void match_line(Line& line, const std::string& path);
  bool take(const Value& resolved);
  void set_flags(const Value& resolved);
  void write(std::string& out) const;
};

namespace {

// Entry indices sorted by key, as emit_canonical_yaml sorts a map's entries.
template <typename Key>
std::vector<size_t> sorted_by_key(size_t n, const Key& key) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  return order;
}

}  // namespace

// The schema keys of `path`, and whether a hashed_unless_default key lies in it.
void CanonicalConfigText::Layout::match_line(Line& line, const std::string& path) {
  const HashRules& rules = hash_rules();
  if (auto it = rules.by_path.find(path); it != rules.by_path.end()) line.keys = it->second;
  for (const std::string& later : rules.later_paths) {
    if (later == path ||
        (later.size() > path.size() && starts_with(later, path) && later[path.size()] == '.')) {
      line.holds_later = true;
    }
  }
}

CanonicalConfigText::Layout::Layout(const Value& resolved) {
  const HashRules& rules = hash_rules();
  for (const Value::Entry& e : resolved.entries()) {
    Top t;
    t.line.key = e.key;
    t.block = is_block(e.value);
    match_line(t.line, e.key);
    auto section = std::find(rules.sections.begin(), rules.sections.end(), e.key);
    if (section != rules.sections.end()) {
      t.section = static_cast<size_t>(section - rules.sections.begin());
    }
    if (t.block) {
      bool top_is_later = std::find(rules.later_paths.begin(), rules.later_paths.end(), e.key) !=
                          rules.later_paths.end();
      append_canonical_yaml_key(t.header, e.key);
      for (const Value::Entry& c : e.value.entries()) {
        Line line;
        line.key = c.key;
        line.value = c.value;
        append_canonical_yaml_entry(line.text, c.key, c.value, 2);
        match_line(line, e.key + "." + c.key);
        line.holds_later = line.holds_later || top_is_later;  // params, of later entries
        t.children.push_back(std::move(line));
      }
      t.sorted = sorted_by_key(t.children.size(),
                               [&](size_t i) -> const std::string& { return t.children[i].key; });
    } else {
      t.line.value = e.value;
      append_canonical_yaml_entry(t.line.text, e.key, e.value, 0);
    }
    tops.push_back(std::move(t));
  }
  sorted =
      sorted_by_key(tops.size(), [&](size_t i) -> const std::string& { return tops[i].line.key; });
  set_flags(resolved);
}

bool CanonicalConfigText::Layout::take(const Value& resolved) {
  const std::vector<Value::Entry>& entries = resolved.entries();
  if (entries.size() != tops.size()) return false;
  bool flags_may_change = false;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Value::Entry& e = entries[i];
    Top& t = tops[i];
    if (e.key != t.line.key || is_block(e.value) != t.block) return false;
    if (!t.block) {
      flags_may_change |= t.line.take(e.value, 0);
      continue;
    }
    const std::vector<Value::Entry>& children = e.value.entries();
    if (children.size() != t.children.size()) return false;
    for (size_t c = 0; c < children.size(); ++c) {
      if (children[c].key != t.children[c].key) return false;
      flags_may_change |= t.children[c].take(children[c].value, 2);
    }
  }
  const Value* benchmark_now = resolved.find_path("benchmark");
  if (flags_may_change || (benchmark_now != nullptr) != had_benchmark ||
      (benchmark_now != nullptr && benchmark_now->as_string() != benchmark)) {
    set_flags(resolved);
  }
  return true;
}

// Which keys and sections the text leaves out, as docs/config.md says: a section whose every key
// belongs to another workload, or was added later and is at its default, vanishes whole (not as
// `infer: {}` or `lora: {}`), so earlier hashes hold.
void CanonicalConfigText::Layout::set_flags(const Value& resolved) {
  const HashRules& rules = hash_rules();
  const Value* benchmark_value = resolved.find_path("benchmark");
  had_benchmark = benchmark_value != nullptr;
  benchmark = had_benchmark ? benchmark_value->as_string() : std::string();
  std::vector<bool> skipped(rules.keys.size(), false);
  std::vector<bool> vanishes(rules.sections.size(), true);
  for (size_t i = 0; i < rules.keys.size(); ++i) {
    const KeySpec& k = *rules.keys[i];
    bool elsewhere = !k.only_for_benchmarks.empty() && (!had_benchmark || !k.applies_to(benchmark));
    bool later_at_default = false;
    if (!elsewhere && k.hashed_unless_default) {
      const Value* v = resolved.find_path(k.path);
      later_at_default = v == nullptr || *v == k.default_value;
    }
    if (rules.section_of[i] != kNone && !(elsewhere || later_at_default)) {
      vanishes[rules.section_of[i]] = false;
    }
    skipped[i] = elsewhere || (k.hashed_unless_default ? later_at_default : !k.hashed);
  }
  auto any_skipped = [&](const Line& line) {
    return std::any_of(line.keys.begin(), line.keys.end(), [&](size_t k) { return skipped[k]; });
  };
  for (Top& t : tops) {
    t.line.skipped = any_skipped(t.line) || (t.section != kNone && vanishes[t.section]);
    for (Line& c : t.children) c.skipped = any_skipped(c);
  }
}

void CanonicalConfigText::Layout::write(std::string& out) const {
  out.clear();
  for (size_t i : sorted) {
    const Top& t = tops[i];
    if (t.line.skipped) continue;
    if (!t.block) {
      out += t.line.text;
      continue;
    }
    out += t.header;
    if (std::all_of(t.children.begin(), t.children.end(),
                    [](const Line& c) { return c.skipped; })) {
      out += ": {}\n";  // as an emptied map is written
      continue;
    }
    out += ":\n";
    for (size_t c : t.sorted) {
      if (!t.children[c].skipped) out += t.children[c].text;
    }
  }
  if (out.empty()) out = "{}\n";
}

CanonicalConfigText::CanonicalConfigText() = default;
CanonicalConfigText::~CanonicalConfigText() = default;

const std::string& CanonicalConfigText::text(const Value& resolved) {
  if (!resolved.is_map()) {
    text_ = emit_canonical_yaml(resolved);
    return text_;
  }
  if (!layout_ || !layout_->take(resolved)) layout_ = std::make_unique<Layout>(resolved);
  layout_->write(text_);
  return text_;
}

std::string CanonicalConfigText::hash(const Value& resolved) { return sha256_hex(text(resolved)); }

std::string canonical_config_text(const Value& resolved) {
  CanonicalConfigText writer;
  return writer.text(resolved);
}

std::string config_hash(const Value& resolved) {
  return sha256_hex(canonical_config_text(resolved));
}

std::string point_config_file_text(const Value& resolved) {
  return "# sweepbench point config. config_hash: " + config_hash(resolved) +
         "\n# (SHA-256 of the canonical form without the scheduling-only keys; docs/config.md)\n" +
         emit_canonical_yaml(resolved);
}

}  // namespace sweepbench
