// A YAML/JSON-shaped value tree that remembers where each part came from.
//
// Configs are merged from many places (schema defaults, defaults files, base, axes, --set); each
// node keeps the Mark of the text that gave it its value, so an error found after merging can
// still name file:line:column. Maps keep insertion order; canonical output sorts keys itself.
// Leaves out: anchors, tags and comments (the loader resolves or rejects them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/error.h"

namespace sweepbench {

class Value {
 public:
  enum class Type { kNull, kBool, kInt, kFloat, kString, kList, kMap };
  struct Entry;

  Value() = default;
  static Value null(Mark mark = {});
  static Value boolean(bool b, Mark mark = {});
  static Value integer(std::int64_t i, Mark mark = {});
  static Value real(double f, Mark mark = {});
  static Value string(std::string s, Mark mark = {});
  static Value list(Mark mark = {});
  static Value map(Mark mark = {});

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_int() const { return type_ == Type::kInt; }
  bool is_float() const { return type_ == Type::kFloat; }
  bool is_number() const { return type_ == Type::kInt || type_ == Type::kFloat; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_list() const { return type_ == Type::kList; }
  bool is_map() const { return type_ == Type::kMap; }
  bool is_scalar() const { return type_ != Type::kList && type_ != Type::kMap; }

  bool as_bool() const { return b_; }
  std::int64_t as_int() const { return i_; }
  double as_float() const { return type_ == Type::kInt ? static_cast<double>(i_) : f_; }
  const std::string& as_string() const { return s_; }

  const std::vector<Value>& items() const { return items_; }
  std::vector<Value>& items() { return items_; }
  const std::vector<Entry>& entries() const { return entries_; }
  std::vector<Entry>& entries() { return entries_; }

  // Map access. find returns nullptr when the key is absent (or this is not a map).
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  // Replaces the value of an existing key (keeping its place) or appends a new entry.
  Value& set(const std::string& key, Value value, Mark key_mark = {});
  bool erase(std::string_view key);

  // Dotted paths through nested maps: "train.micro_batch".
  const Value* find_path(std::string_view dotted) const;
  Value* find_path(std::string_view dotted);
  // Creates intermediate maps as needed; replaces non-map intermediates.
  Value& set_path(std::string_view dotted, Value value);

  const Mark& mark() const { return mark_; }
  void set_mark(Mark mark) { mark_ = std::move(mark); }

  // "an integer", "a string", ... for error messages.
  std::string type_name() const;
  // "the integer 3", "the string \"x\"", "a list of 2 items" for error messages.
  std::string describe() const;
  // The same without the content of a string ("a string of 31 characters"): for a whole
  // document that is not a mapping, which may be any file (/etc/shadow) and is not echoed.
  std::string describe_without_text() const;

 private:
  Type type_ = Type::kNull;
  bool b_ = false;
  std::int64_t i_ = 0;
  double f_ = 0.0;
  std::string s_;
  std::vector<Value> items_;
  std::vector<Entry> entries_;
  Mark mark_;
};

struct Value::Entry {
  std::string key;
  Mark key_mark;
  Value value;
};

// Structural equality: types must match (1 != 1.0), marks are ignored, map order is ignored.
bool operator==(const Value& a, const Value& b);
inline bool operator!=(const Value& a, const Value& b) { return !(a == b); }

// Deep merge: maps merge key by key (over wins), anything else is replaced by `over`.
void merge_into(Value& base, const Value& over);

// The string at map[key], or "" when there is none or it is not a string: for reading files that
// other tools or older versions may have written (status.json, manifests, claims).
std::string text_field(const Value& map, std::string_view key);
// The integer under `key`, else `fallback` (absent, or not an integer).
std::int64_t int_field(const Value& map, std::string_view key, std::int64_t fallback);

// A scalar as text: strings as they are, integers in decimal, floats as YAML writes them
// (format_float_repr), booleans true/false, null as "". Lists and maps give "".
std::string scalar_text(const Value& v);

// Splits "a.b.c" into {"a","b","c"}.
std::vector<std::string> split_path(std::string_view dotted);

// Gets a key of a resolved config; throws a std::logic_error if the schema lacks it (a resolved
// config holds every key of the schema, so a missing one is our bug, not the user's).
const Value& config_at(const Value& resolved, std::string_view path);

}  // namespace sweepbench
