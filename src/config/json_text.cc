// A map's JSON text, rewritten entry by entry (json_text.h).
#include "config/json_text.h"

#include "config/yaml_io.h"
#include "text/text.h"

namespace sweepbench {
namespace {

bool is_block(const Value& v) { return v.is_map() && !v.entries().empty(); }

// What emit_json writes before an entry's value: the comma, the line break and indentation,
// the quoted key.
std::string entry_head(const std::string& key, bool first, int indent, int level) {
  std::string head = first ? "\n" : ",\n";
  head.append(static_cast<size_t>(indent * level), ' ');
  append_quoted_json(head, key);
  head += ": ";
  return head;
}

}  // namespace

bool written_alike(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  // The scalars a config is made of, here rather than through operator== (floats go there):
  // operator== alone gives the same answers, but planning 100,000 points took 3-5% more CPU
  // without this switch (2026-12-01, alternated runs), on a goal with little margin (3 s).
  switch (a.type()) {
    case Value::Type::kNull:
      return true;
    case Value::Type::kBool:
      return a.as_bool() == b.as_bool();
    case Value::Type::kInt:
      return a.as_int() == b.as_int();
    case Value::Type::kString:
      return a.as_string() == b.as_string();
    default:
      break;
  }
  if (a.is_list()) {
    if (a.items().size() != b.items().size()) return false;
    for (size_t i = 0; i < a.items().size(); ++i) {
      if (!written_alike(a.items()[i], b.items()[i])) return false;
    }
    return true;
  }
  if (a.is_map()) {
    if (a.entries().size() != b.entries().size()) return false;
    for (size_t i = 0; i < a.entries().size(); ++i) {
      const Value::Entry &x = a.entries()[i], &y = b.entries()[i];
      if (x.key != y.key || !written_alike(x.value, y.value)) return false;
    }
    return true;
  }
  return a == b;
}

bool JsonMapText::Entry::take(const Value& v, int indent, int level) {
  if (!text.empty() && written_alike(v, value)) return false;
  value = v;
  text = emit_json(value, indent, false, level);
  return true;
}

void JsonMapText::learn(const Value& map) {
  tops_.clear();
  bool first = true;
  for (const Value::Entry& e : map.entries()) {
    Top t;
    t.block = is_block(e.value);
    t.entry.head = entry_head(e.key, first, indent_, level_ + 1);
    first = false;
    t.entry.key = e.key;
    if (t.block) {
      bool first_child = true;
      for (const Value::Entry& c : e.value.entries()) {
        Entry child;
        child.head = entry_head(c.key, first_child, indent_, level_ + 2);
        first_child = false;
        child.key = c.key;
        t.children.push_back(std::move(child));
      }
    }
    tops_.push_back(std::move(t));
  }
  learnt_ = true;
}

void JsonMapText::append(const Value& map, std::string& out) {
  if (!is_block(map) || indent_ < 0) {
    out += emit_json(map, indent_, false, level_);
    return;
  }
  // The layout is checked as the map is written; a map of another one is written again, learnt.
  size_t start = out.size();
  if (learnt_ && write(map, out)) return;
  out.resize(start);
  learn(map);
  write(map, out);
}

// Appends the map's text; false, having written part of it, when it has another layout than the
// one learnt: other keys, in another order, or an entry a non-empty map here and not there.
bool JsonMapText::write(const Value& map, std::string& out) {
  const std::vector<Value::Entry>& entries = map.entries();
  if (entries.size() != tops_.size()) return false;
  out += '{';
  for (size_t i = 0; i < entries.size(); ++i) {
    Top& t = tops_[i];
    const Value::Entry& e = entries[i];
    if (e.key != t.entry.key || is_block(e.value) != t.block) return false;
    out += t.entry.head;
    if (!t.block) {
      t.entry.take(e.value, indent_, level_ + 1);
      out += t.entry.text;
      continue;
    }
    // The section's text is joined again when one of its entries changed (one in most points).
    const std::vector<Value::Entry>& children = e.value.entries();
    if (children.size() != t.children.size()) return false;
    bool changed = t.joined.empty();
    for (size_t c = 0; c < children.size(); ++c) {
      if (children[c].key != t.children[c].key) return false;
      changed |= t.children[c].take(children[c].value, indent_, level_ + 2);
    }
    if (changed) {
      t.joined = '{';
      for (const Entry& child : t.children) {
        t.joined += child.head;
        t.joined += child.text;
      }
      t.joined += '\n';
      t.joined.append(static_cast<size_t>(indent_ * (level_ + 1)), ' ');
      t.joined += '}';
    }
    out += t.joined;
  }
  out += '\n';
  out.append(static_cast<size_t>(indent_ * level_), ' ');
  out += '}';
  return true;
}

}  // namespace sweepbench
