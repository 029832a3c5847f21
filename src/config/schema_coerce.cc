// schema.h's checks of a value against its key (Schema::coerce, coerce_map_entry), and the text
// that names a key's type and range in their messages and the docs (KeySpec::type_text).
#include <algorithm>
#include <cmath>

#include "config/schema.h"
#include "text/text.h"

namespace sweepbench {
namespace {

bool valid_slurm_time(const std::string& s) {
  if (s == "UNLIMITED" || s == "INFINITE" || s == "unlimited" || s == "infinite") return true;
  auto numeric = [](std::string_view part) {
    return !part.empty() && part.find_first_not_of("0123456789") == std::string_view::npos;
  };
  std::string_view rest(s);
  size_t dash = rest.find('-');
  if (dash != std::string_view::npos) {
    if (!numeric(rest.substr(0, dash))) return false;
    rest = rest.substr(dash + 1);
  }
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t colon = rest.find(':', start);
    parts.push_back(rest.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) return false;
  for (std::string_view p : parts) {
    if (!numeric(p)) return false;
  }
  return true;
}

std::string range_text(const KeySpec& s) {
  std::string out;
  auto num = [](double v) {
    if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
    return format_float_repr(v);
  };
  if (s.min && s.max) {
    out = std::string(s.min_exclusive ? "in (" : "in [") + num(*s.min) + ", " + num(*s.max) +
          (s.max_exclusive ? ")" : "]");
  } else if (s.min) {
    out = std::string(s.min_exclusive ? "> " : ">= ") + num(*s.min);
  } else if (s.max) {
    out = std::string(s.max_exclusive ? "< " : "<= ") + num(*s.max);
  }
  return out;
}

// A NUL ends the string for every program it is passed to (argv, the environment, gnuplot) and
// truncates the CSV for pandas: no config string may hold one.
void refuse_nul(const Value& v, const std::string& path) {
  if (v.as_string().find('\0') == std::string::npos) return;
  throw Error::input(v.mark(), path, "contains a NUL character (\\0)",
                     "no program can be given it; remove it");
}

// A name for a message: control characters (NUL among them) as \xNN.
std::string printable(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20) {
      const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[(c >> 4) & 15];
      out += hex[c & 15];
    } else {
      out += c;
    }
  }
  return out;
}

// params.x: a name for placeholders and columns, a scalar or a list of scalars kept as typed.
Value coerce_free_entry(const KeySpec& spec, const std::string& entry, const Value& value) {
  std::string path = spec.path + "." + entry;
  bool name_ok = !entry.empty();
  for (char c : entry) {
    name_ok = name_ok && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                          (c >= '0' && c <= '9') || c == '_' || c == '-');
  }
  if (!name_ok) {
    throw Error::input(value.mark(), spec.path,
                       "'" + printable(entry) + "' is not a name for " + spec.path,
                       "use letters, digits, _ and -, e.g. " + spec.path + ".peft_method");
  }
  auto check_scalar = [&](const Value& v) {
    if (!v.is_scalar()) {
      throw Error::input(v.mark().known() ? v.mark() : value.mark(), path,
                         "expected a scalar or a list of scalars, got " + v.describe());
    }
    if (v.is_string()) refuse_nul(v, path);
    if (v.is_float() && !std::isfinite(v.as_float())) {
      throw Error::input(v.mark().known() ? v.mark() : value.mark(), path,
                         "must be a finite number, got " + v.describe());
    }
  };
  if (value.is_list()) {
    for (const Value& item : value.items()) check_scalar(item);
  } else {
    check_scalar(value);
  }
  return value;
}

}  // namespace

std::string KeySpec::type_text() const {
  std::string t;
  switch (type) {
    case KeyType::kInt:
      t = "integer";
      break;
    case KeyType::kFloat:
      t = "float";
      break;
    case KeyType::kBool:
      t = "boolean";
      break;
    case KeyType::kString:
      t = "string";
      break;
    case KeyType::kEnum:
      t = "one of " + join(choices, ", ");
      break;
    case KeyType::kStringList:
      t = "list of strings";
      break;
    case KeyType::kNumberList:
      t = "number or list of numbers";
      break;
    case KeyType::kStringMap:
      t = "mapping of names to strings";
      break;
    case KeyType::kFreeMap:
      t = "mapping of names to scalars or lists";
      break;
    case KeyType::kRecordList:
      t = "list of mappings";
      break;
    case KeyType::kSlurmTime:
      t = "SLURM time (string) or minutes (integer)";
      break;
  }
  std::string range = range_text(*this);
  if (!range.empty()) t += " " + range;
  if (nullable) t += ", or null";
  return t;
}

namespace {

// One value being checked against its key: the errors it gives name the key.
struct Check {
  const KeySpec& spec;
  const Value& value;

  Error fail(const std::string& why, const std::string& hint = {}) const {
    return Error::input(value.mark(), spec.path, why, hint);
  }
  Error expected() const {
    return fail("expected " + spec.type_text() + ", got " + value.describe());
  }
  void check_range(double v) const {
    bool low = spec.min && (spec.min_exclusive ? v <= *spec.min : v < *spec.min);
    bool high = spec.max && (spec.max_exclusive ? v >= *spec.max : v > *spec.max);
    if (low || high) {
      throw fail("must be " + range_text(spec) + ", got " + value.describe().substr(4));
    }
  }
};

Value coerce_int(const Check& c) {
  const Value& value = c.value;
  if (!value.is_int()) {
    if (value.is_float() && std::floor(value.as_float()) == value.as_float()) {
      throw c.fail("expected an integer, got " + value.describe(),
                   "write it without a decimal point");
    }
    throw c.expected();
  }
  c.check_range(static_cast<double>(value.as_int()));
  return value;
}

Value coerce_float(const Check& c) {
  const Value& value = c.value;
  if (!value.is_number()) throw c.expected();
  double v = value.as_float();
  if (!std::isfinite(v)) throw c.fail("must be a finite number, got " + value.describe());
  c.check_range(v);
  return Value::real(v, value.mark());
}

Value coerce_string(const Check& c) {
  const Value& value = c.value;
  if (!value.is_string()) {
    if (value.is_scalar()) {
      throw c.fail("expected a string, got " + value.describe(), "quote it to make it a string");
    }
    throw c.expected();
  }
  refuse_nul(value, c.spec.path);
  return value;
}

Value coerce_enum(const Check& c) {
  const Value& value = c.value;
  const KeySpec& spec = c.spec;
  if (!value.is_string()) throw c.expected();
  refuse_nul(value, spec.path);
  const std::string& s = value.as_string();
  if (std::find(spec.choices.begin(), spec.choices.end(), s) != spec.choices.end()) {
    return value;
  }
  std::string message = "'" + s + "' is not one of " + join(spec.choices, ", ");
  if (auto near = closest_match(s, spec.choices)) {
    throw c.fail(message, "did you mean '" + *near + "'?");
  }
  throw c.fail(message);
}

Value coerce_string_list(const Check& c) {
  const Value& value = c.value;
  const Mark& mark = value.mark();
  if (!value.is_list()) throw c.expected();
  for (const Value& item : value.items()) {
    if (!item.is_string()) {
      throw Error::input(item.mark().known() ? item.mark() : mark, c.spec.path,
                         "expected a list of strings, but an item is " + item.describe(),
                         item.is_scalar() ? "quote it to make it a string" : "");
    }
    refuse_nul(item, c.spec.path);
  }
  return value;
}

Value coerce_number_list(const Check& c) {
  const Value& value = c.value;
  const KeySpec& spec = c.spec;
  const Mark& mark = value.mark();
  // One number is a list of one: an axis of numbers gives each point one level.
  Value list = value.is_list() ? value : Value::list(mark);
  if (!value.is_list()) list.items().push_back(value);
  Value out = Value::list(mark);
  for (const Value& item : list.items()) {
    const Mark& at = item.mark().known() ? item.mark() : mark;
    if (!item.is_number() || !std::isfinite(item.as_float())) {
      throw Error::input(
          at, spec.path,
          "expected a number or a list of numbers, but an item is " + item.describe());
    }
    double v = item.as_float();
    bool low = spec.min && (spec.min_exclusive ? v <= *spec.min : v < *spec.min);
    bool high = spec.max && (spec.max_exclusive ? v >= *spec.max : v > *spec.max);
    if (low || high) {
      throw Error::input(
          at, spec.path,
          "each item must be " + range_text(spec) + ", got " + item.describe().substr(4));
    }
    out.items().push_back(item.is_int() ? Value::integer(item.as_int(), at) : Value::real(v, at));
  }
  return out;
}

Value coerce_record_list(const Check& c) {
  const Value& value = c.value;
  if (!value.is_list()) throw c.expected();
  for (const Value& item : value.items()) {
    if (!item.is_map()) {
      throw Error::input(item.mark().known() ? item.mark() : value.mark(), c.spec.path,
                         "expected a list of mappings, but an item is " + item.describe());
    }
  }
  return value;
}

Value coerce_slurm_time(const Check& c) {
  const Value& value = c.value;
  if (value.is_int()) {
    if (value.as_int() < 0) throw c.fail("a time limit in minutes must be >= 0");
    return Value::string(std::to_string(value.as_int()), value.mark());
  }
  if (!value.is_string()) throw c.expected();
  if (!valid_slurm_time(value.as_string())) {
    throw c.fail("'" + value.as_string() + "' is not a SLURM time",
                 "use minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS");
  }
  return value;
}

}  // namespace

Value Schema::coerce(const KeySpec& spec, const Value& value) const {
  const Check check{spec, value};
  if (value.is_null()) {
    if (spec.nullable) return value;
    throw check.fail("must not be null; expected " + spec.type_text());
  }
  switch (spec.type) {
    case KeyType::kInt:
      return coerce_int(check);
    case KeyType::kFloat:
      return coerce_float(check);
    case KeyType::kBool:
      if (!value.is_bool()) throw check.expected();
      return value;
    case KeyType::kString:
      return coerce_string(check);
    case KeyType::kEnum:
      return coerce_enum(check);
    case KeyType::kStringList:
      return coerce_string_list(check);
    case KeyType::kNumberList:
      return coerce_number_list(check);
    case KeyType::kRecordList:
      return coerce_record_list(check);
    case KeyType::kFreeMap:
    case KeyType::kStringMap: {
      if (!value.is_map()) throw check.expected();
      Value out = Value::map(value.mark());
      for (const Value::Entry& e : value.entries()) {
        out.set(e.key, coerce_map_entry(spec, e.key, e.value), e.key_mark);
      }
      return out;
    }
    case KeyType::kSlurmTime:
      return coerce_slurm_time(check);
  }
  throw check.expected();
}

Value Schema::coerce_map_entry(const KeySpec& spec, const std::string& entry,
                               const Value& value) const {
  std::string path = spec.path + "." + entry;
  if (entry.empty()) throw Error::input(value.mark(), spec.path, "an entry has an empty name");
  if (spec.type == KeyType::kFreeMap) return coerce_free_entry(spec, entry, value);
  // The maps are environments (launch.env, container.env): setenv() refuses a name with '=' and
  // `env NAME=VALUE` would split it elsewhere, so a bad name must not pass silently.
  if (!is_identifier(entry)) {
    throw Error::input(
        value.mark(), spec.path, "'" + printable(entry) + "' is not an environment variable name",
        "use letters, digits and _, not starting with a digit, e.g. OMP_NUM_THREADS");
  }
  switch (value.type()) {
    case Value::Type::kString:
      refuse_nul(value, path);
      return value;
    case Value::Type::kInt:
      return Value::string(std::to_string(value.as_int()), value.mark());
    case Value::Type::kFloat:
      return Value::string(format_float_repr(value.as_float()), value.mark());
    case Value::Type::kBool:
      return Value::string(value.as_bool() ? "true" : "false", value.mark());
    default:
      throw Error::input(value.mark(), path, "expected a string, got " + value.describe());
  }
}

}  // namespace sweepbench
