// yaml_io.h, the writing half: canonical YAML, JSON, and values shown to people.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "config/yaml_io.h"
#include "text/text.h"

namespace sweepbench {
namespace {

bool is_plain_key(const std::string& key) {
  if (key.empty()) return false;
  char c0 = key[0];
  if (!((c0 >= 'A' && c0 <= 'Z') || (c0 >= 'a' && c0 <= 'z') || c0 == '_')) return false;
  for (char c : key) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  // Words the core schema would read as something other than a string: starting with a letter or
  // '_', only null, true and false in their three spellings, none longer than five characters.
  if (key.size() > 5) return true;
  Value typed = type_plain_scalar(key, Mark{});
  return typed.is_string();
}

std::string canonical_scalar(const Value& v) {
  switch (v.type()) {
    case Value::Type::kNull:
      return "null";
    case Value::Type::kBool:
      return v.as_bool() ? "true" : "false";
    case Value::Type::kInt:
      return std::to_string(v.as_int());
    case Value::Type::kFloat: {
      double f = v.as_float();
      if (std::isnan(f)) return ".nan";
      if (std::isinf(f)) return f > 0 ? ".inf" : "-.inf";
      return format_float_repr(f);
    }
    case Value::Type::kString:
      return quote_json(v.as_string());
    default:
      return "";
  }
}

// The entries of a map, sorted by key when `sort_keys`; no allocation for maps of up to 64
// entries (every map of a config).
class OrderedEntries {
 public:
  OrderedEntries(const Value& map, bool sort_keys) {
    const std::vector<Value::Entry>& entries = map.entries();
    size_ = entries.size();
    if (size_ > kInline) {
      heap_.reserve(size_);
      for (const Value::Entry& e : entries) heap_.push_back(&e);
      data_ = heap_.data();
    } else {
      for (size_t i = 0; i < size_; ++i) inline_[i] = &entries[i];
      data_ = inline_;
    }
    if (sort_keys) {
      std::sort(data_, data_ + size_,
                [](const Value::Entry* a, const Value::Entry* b) { return a->key < b->key; });
    }
  }
  OrderedEntries(const OrderedEntries&) = delete;  // data_ may point into inline_
  OrderedEntries& operator=(const OrderedEntries&) = delete;
  const Value::Entry* const* begin() const { return data_; }
  const Value::Entry* const* end() const { return data_ + size_; }

 private:
  static constexpr size_t kInline = 64;
  const Value::Entry* inline_[kInline];
  std::vector<const Value::Entry*> heap_;
  const Value::Entry** data_ = nullptr;
  size_t size_ = 0;
};

OrderedEntries ordered_entries(const Value& map, bool sort_keys) {
  return OrderedEntries(map, sort_keys);
}

// A scalar as canonical YAML and JSON both write it (strings JSON-quoted), appended to `out`.
void append_canonical_scalar(std::string& out, const Value& v) {
  switch (v.type()) {
    case Value::Type::kString:
      append_quoted_json(out, v.as_string());
      return;
    case Value::Type::kInt: {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof(buf), v.as_int());
      out.append(buf, r.ptr);
      return;
    }
    default:
      out += canonical_scalar(v);
  }
}

// Flow style (one line) for lists and anything inside them, appended to `out`.
void append_canonical_flow(std::string& out, const Value& v) {
  switch (v.type()) {
    case Value::Type::kList:
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i > 0) out += ", ";
        append_canonical_flow(out, v.items()[i]);
      }
      out += ']';
      return;
    case Value::Type::kMap: {
      out += '{';
      bool first = true;
      for (const Value::Entry* e : ordered_entries(v, true)) {
        if (!first) out += ", ";
        first = false;
        append_quoted_json(out, e->key);
        out += ": ";
        append_canonical_flow(out, e->value);
      }
      out += '}';
      return;
    }
    default:
      append_canonical_scalar(out, v);
  }
}

std::string canonical_flow(const Value& v) {
  std::string out;
  append_canonical_flow(out, v);
  return out;
}

void append_yaml_key(std::string& out, const std::string& key) {
  if (is_plain_key(key)) {
    out += key;
  } else {
    append_quoted_json(out, key);
  }
}

// `skip`: dotted paths (of the top level and one level down) left out, with `prefix` the path of
// `map` ("" at the top).
void emit_block_map(const Value& map, int indent, std::string& out,
                    const std::vector<std::string>* skip = nullptr,
                    const std::string& prefix = "") {
  for (const Value::Entry* e : ordered_entries(map, true)) {
    if (skip != nullptr) {
      std::string path = prefix.empty() ? e->key : prefix + "." + e->key;
      if (std::find(skip->begin(), skip->end(), path) != skip->end()) continue;
      if (e->value.is_map() && !e->value.entries().empty() && prefix.empty()) {
        bool all_skipped = std::all_of(
            e->value.entries().begin(), e->value.entries().end(), [&](const Value::Entry& c) {
              return std::find(skip->begin(), skip->end(), path + "." + c.key) != skip->end();
            });
        out.append(static_cast<size_t>(indent), ' ');
        append_yaml_key(out, e->key);
        if (all_skipped) {
          out += ": {}\n";  // as an emptied map is written
          continue;
        }
        out += ":\n";
        emit_block_map(e->value, indent + 2, out, skip, path);
        continue;
      }
    }
    append_canonical_yaml_entry(out, e->key, e->value, indent);
  }
}

void emit_json_into(const Value& v, int indent, int level, bool sort_keys, std::string& out) {
  auto newline = [&](int lvl) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * lvl), ' ');
  };
  switch (v.type()) {
    case Value::Type::kFloat:
      if (!std::isfinite(v.as_float())) {
        out += "null";
        return;
      }
      out += format_float_repr(v.as_float());
      return;
    case Value::Type::kList: {
      if (v.items().empty()) {
        out += "[]";
        return;
      }
      out += "[";
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i > 0) out += indent < 0 ? ", " : ",";
        newline(level + 1);
        emit_json_into(v.items()[i], indent, level + 1, sort_keys, out);
      }
      newline(level);
      out += "]";
      return;
    }
    case Value::Type::kMap: {
      if (v.entries().empty()) {
        out += "{}";
        return;
      }
      out += "{";
      bool first = true;
      for (const Value::Entry* e : ordered_entries(v, sort_keys)) {
        if (!first) out += indent < 0 ? ", " : ",";
        first = false;
        newline(level + 1);
        append_quoted_json(out, e->key);
        out += ": ";
        emit_json_into(e->value, indent, level + 1, sort_keys, out);
      }
      newline(level);
      out += "}";
      return;
    }
    default:
      append_canonical_scalar(out, v);
  }
}

}  // namespace

namespace {

bool plain_display(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c == ' ' || c == ',' || c == '[' || c == ']' || c == '{' || c == '}' || c == '"' ||
        c == '\n' || c == '\t' || c == '#' || c == ':') {
      return false;
    }
  }
  // Strings that would read back as another type are quoted.
  return type_plain_scalar(s, Mark{}).is_string();
}

}  // namespace

std::string display_value(const Value& value) {
  switch (value.type()) {
    case Value::Type::kString:
      return plain_display(value.as_string()) ? value.as_string() : quote_json(value.as_string());
    case Value::Type::kList: {
      std::vector<std::string> parts;
      for (const Value& i : value.items()) parts.push_back(display_value(i));
      return "[" + join(parts, ", ") + "]";
    }
    case Value::Type::kMap: {
      std::vector<std::string> parts;
      for (const Value::Entry& e : value.entries()) {
        parts.push_back(e.key + ": " + display_value(e.value));
      }
      return "{" + join(parts, ", ") + "}";
    }
    case Value::Type::kFloat:
      return format_float_repr(value.as_float());
    default:
      return emit_json(value, -1);
  }
}

void append_canonical_yaml_key(std::string& out, const std::string& key) {
  append_yaml_key(out, key);
}

void append_canonical_yaml_entry(std::string& out, const std::string& key, const Value& value,
                                 int indent) {
  out.append(static_cast<size_t>(indent), ' ');
  append_yaml_key(out, key);
  out += ':';
  if (value.is_map() && !value.entries().empty()) {
    out += '\n';
    emit_block_map(value, indent + 2, out);
  } else {
    out += ' ';
    append_canonical_flow(out, value);
    out += '\n';
  }
}

std::string emit_canonical_yaml(const Value& value, const std::vector<std::string>& skip) {
  if (!value.is_map()) return canonical_flow(value) + "\n";
  if (value.entries().empty()) return "{}\n";
  std::string out;
  emit_block_map(value, 0, out, skip.empty() ? nullptr : &skip);
  if (out.empty()) return "{}\n";
  return out;
}

std::string emit_json(const Value& value, int indent, bool sort_keys, int level) {
  std::string out;
  emit_json_into(value, indent, level, sort_keys, out);
  return out;
}

}  // namespace sweepbench
