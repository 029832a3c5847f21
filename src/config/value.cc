#include "config/value.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "text/text.h"

namespace sweepbench {

Value Value::null(Mark mark) {
  Value v;
  v.mark_ = std::move(mark);
  return v;
}

Value Value::boolean(bool b, Mark mark) {
  Value v;
  v.type_ = Type::kBool;
  v.b_ = b;
  v.mark_ = std::move(mark);
  return v;
}

Value Value::integer(std::int64_t i, Mark mark) {
  Value v;
  v.type_ = Type::kInt;
  v.i_ = i;
  v.mark_ = std::move(mark);
  return v;
}

Value Value::real(double f, Mark mark) {
  Value v;
  v.type_ = Type::kFloat;
  v.f_ = f;
  v.mark_ = std::move(mark);
  return v;
}

Value Value::string(std::string s, Mark mark) {
  Value v;
  v.type_ = Type::kString;
  v.s_ = std::move(s);
  v.mark_ = std::move(mark);
  return v;
}

Value Value::list(Mark mark) {
  Value v;
  v.type_ = Type::kList;
  v.mark_ = std::move(mark);
  return v;
}

Value Value::map(Mark mark) {
  Value v;
  v.type_ = Type::kMap;
  v.mark_ = std::move(mark);
  return v;
}

const Value* Value::find(std::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

Value* Value::find(std::string_view key) {
  for (Entry& e : entries_) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

Value& Value::set(const std::string& key, Value value, Mark key_mark) {
  if (type_ != Type::kMap) {
    *this = Value::map(mark_);
  }
  for (Entry& e : entries_) {
    if (e.key == key) {
      e.value = std::move(value);
      if (key_mark.known()) e.key_mark = std::move(key_mark);
      return e.value;
    }
  }
  entries_.push_back(Entry{key, std::move(key_mark), std::move(value)});
  return entries_.back().value;
}

bool Value::erase(std::string_view key) {
  auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

// Part by part as split_path cuts it, without making the parts: checks read keys by path at
// every point of a plan.
const Value* Value::find_path(std::string_view dotted) const {
  const Value* node = this;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    if (!node->is_map()) return nullptr;
    node = node->find(dotted.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (node == nullptr || dot == std::string_view::npos) return node;
    start = dot + 1;
  }
}

Value* Value::find_path(std::string_view dotted) {
  return const_cast<Value*>(static_cast<const Value&>(*this).find_path(dotted));
}

Value& Value::set_path(std::string_view dotted, Value value) {
  std::vector<std::string> parts = split_path(dotted);
  Value* node = this;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    Value* child = node->is_map() ? node->find(parts[i]) : nullptr;
    if (child == nullptr || !child->is_map()) {
      child = &node->set(parts[i], Value::map(value.mark()));
    }
    node = child;
  }
  return node->set(parts.back(), std::move(value));
}

std::string Value::type_name() const {
  switch (type_) {
    case Type::kNull:
      return "null";
    case Type::kBool:
      return "a boolean";
    case Type::kInt:
      return "an integer";
    case Type::kFloat:
      return "a float";
    case Type::kString:
      return "a string";
    case Type::kList:
      return "a list";
    case Type::kMap:
      return "a mapping";
  }
  return "?";
}

std::string Value::describe() const {
  switch (type_) {
    case Type::kNull:
      return "null";
    case Type::kBool:
      return std::string("the boolean ") + (b_ ? "true" : "false");
    case Type::kInt:
      return "the integer " + std::to_string(i_);
    case Type::kFloat:
      return "the float " + format_float_repr(f_);
    case Type::kString:
      return "the string " + quote_json(s_);
    case Type::kList:
      return "a list of " + std::to_string(items_.size()) + " item" +
             (items_.size() == 1 ? "" : "s");
    case Type::kMap:
      return "a mapping";
  }
  return "?";
}

std::string Value::describe_without_text() const {
  if (type_ != Type::kString) return describe();
  return "a string of " + std::to_string(s_.size()) +
         (s_.size() == 1 ? " character" : " characters");
}

bool operator==(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::kNull:
      return true;
    case Value::Type::kBool:
      return a.as_bool() == b.as_bool();
    case Value::Type::kInt:
      return a.as_int() == b.as_int();
    case Value::Type::kFloat: {
      // Equal as their text is (format_float_repr is the shortest round trip, so distinct doubles
      // read differently): NaN equals NaN, 0.0 differs from -0.0. Compared by bits, not by text.
      double x = a.as_float(), y = b.as_float();
      if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
      return std::memcmp(&x, &y, sizeof(double)) == 0;
    }
    case Value::Type::kString:
      return a.as_string() == b.as_string();
    case Value::Type::kList:
      return a.items() == b.items();
    case Value::Type::kMap: {
      if (a.entries().size() != b.entries().size()) return false;
      for (const Value::Entry& e : a.entries()) {
        const Value* other = b.find(e.key);
        if (other == nullptr || !(e.value == *other)) return false;
      }
      return true;
    }
  }
  return false;
}

void merge_into(Value& base, const Value& over) {
  if (base.is_map() && over.is_map()) {
    for (const Value::Entry& e : over.entries()) {
      Value* existing = base.find(e.key);
      if (existing != nullptr && existing->is_map() && e.value.is_map()) {
        merge_into(*existing, e.value);
      } else {
        base.set(e.key, e.value, e.key_mark);
      }
    }
    return;
  }
  base = over;
}

std::vector<std::string> split_path(std::string_view dotted) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    parts.emplace_back(dotted.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

std::int64_t int_field(const Value& map, std::string_view key, std::int64_t fallback) {
  const Value* f = map.find(key);
  return f != nullptr && f->is_int() ? f->as_int() : fallback;
}

std::string scalar_text(const Value& v) {
  switch (v.type()) {
    case Value::Type::kBool:
      return v.as_bool() ? "true" : "false";
    case Value::Type::kInt:
      return std::to_string(v.as_int());
    case Value::Type::kFloat:
      return format_float_repr(v.as_float());
    case Value::Type::kString:
      return v.as_string();
    default:
      return "";
  }
}

std::string text_field(const Value& map, std::string_view key) {
  const Value* f = map.find(key);
  return f != nullptr && f->is_string() ? f->as_string() : std::string();
}

const Value& config_at(const Value& resolved, std::string_view path) {
  const Value* v = resolved.find_path(path);
  if (v == nullptr) throw std::logic_error("config has no key " + std::string(path));
  return *v;
}

}  // namespace sweepbench
