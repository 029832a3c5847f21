// yaml_io.h's direct reader of the YAML and JSON sweepbench writes itself (parse_own_yaml).
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <string>

#include "config/yaml_io.h"
#include "text/text.h"

namespace sweepbench {
namespace {

constexpr int kMaxDepth = kYamlMaxDepth;

// The subset emit_canonical_yaml and emit_json write: block maps indented by two spaces whose
// values are flow values on the key's line, or a flow value alone (JSON); flow values are
// double-quoted strings with JSON escapes, [..], {"key": ..} and plain scalars of number-like
// characters. read() gives nullopt at the first thing outside the subset.
class OwnYamlReader {
 public:
  OwnYamlReader(std::string_view text, const std::string& source)
      : t_(text), source_(std::make_shared<const std::string>(source)) {}

  std::optional<Value> read() {
    skip_blank_and_comment_lines();
    if (at_end()) return std::nullopt;
    std::optional<Value> v;
    if (t_[p_] == '{' || t_[p_] == '[') {
      v = flow(0, true);
      skip_space(true);
    } else {
      v = block_map(0, 0);
      skip_blank_and_comment_lines();
    }
    if (!v || !at_end()) return std::nullopt;
    return v;
  }

 private:
  bool at_end() const { return p_ >= t_.size(); }
  Mark mark() const { return Mark{source_, line_, 0}; }

  // Whole lines that are empty or comments; p_ ends at the start of a content line.
  void skip_blank_and_comment_lines() {
    while (!at_end()) {
      size_t q = p_;
      while (q < t_.size() && t_[q] == ' ') ++q;
      if (q < t_.size() && t_[q] != '\n' && t_[q] != '#') return;
      while (q < t_.size() && t_[q] != '\n') ++q;
      if (q < t_.size()) {
        ++q;
        ++line_;
      }
      p_ = q;
    }
  }
  void skip_space(bool newlines) {
    while (!at_end() && (t_[p_] == ' ' || (newlines && t_[p_] == '\n'))) {
      if (t_[p_] == '\n') ++line_;
      ++p_;
    }
  }
  size_t indent_here() const {
    size_t q = p_;
    while (q < t_.size() && t_[q] == ' ') ++q;
    return q - p_;
  }

  std::optional<Value> block_map(size_t indent, int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    Value map = Value::map(mark());
    std::set<std::string> seen;
    while (true) {
      skip_blank_and_comment_lines();
      if (at_end()) break;
      size_t here = indent_here();
      if (here < indent) break;
      if (here > indent) return std::nullopt;
      p_ += here;
      Mark key_mark = mark();
      std::optional<std::string> key = this->key();
      if (!key || at_end() || t_[p_] != ':' || !seen.insert(*key).second) return std::nullopt;
      ++p_;
      if (!at_end() && t_[p_] == '\n') {  // a nested map on the lines below
        ++p_;
        ++line_;
        skip_blank_and_comment_lines();
        if (at_end() || indent_here() != indent + 2) return std::nullopt;
        std::optional<Value> inner = block_map(indent + 2, depth + 1);
        if (!inner) return std::nullopt;
        map.entries().push_back({*key, key_mark, std::move(*inner)});
        continue;
      }
      if (at_end() || t_[p_] != ' ') return std::nullopt;
      skip_space(false);
      std::optional<Value> v = flow(depth + 1, false);
      if (!v) return std::nullopt;
      skip_space(false);
      if (!at_end()) {
        if (t_[p_] != '\n') return std::nullopt;  // a comment or more after the value
        ++p_;
        ++line_;
      }
      map.entries().push_back({*key, key_mark, std::move(*v)});
    }
    if (map.entries().empty()) return std::nullopt;
    return map;
  }

  std::optional<std::string> key() {
    if (!at_end() && t_[p_] == '"') return quoted();
    size_t start = p_;
    while (!at_end() && plain_char(t_[p_])) ++p_;
    if (p_ == start) return std::nullopt;
    return std::string(t_.substr(start, p_ - start));
  }

  static bool plain_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == '+';
  }

  // Inside brackets (`nested`) newlines are spaces, as in JSON; a block value is one line.
  std::optional<Value> flow(int depth, bool multiline) {
    if (depth > kMaxDepth || at_end()) return std::nullopt;
    Mark m = mark();
    char c = t_[p_];
    if (c == '"') {
      std::optional<std::string> s = quoted();
      if (!s) return std::nullopt;
      return Value::string(std::move(*s), m);
    }
    if (c == '[' || c == '{') {
      bool is_map = c == '{';
      char close = is_map ? '}' : ']';
      ++p_;
      Value v = is_map ? Value::map(m) : Value::list(m);
      std::set<std::string> seen;
      skip_space(multiline);
      if (!at_end() && t_[p_] == close) {
        ++p_;
        return v;
      }
      while (true) {
        skip_space(multiline);
        if (is_map) {
          Mark key_mark = mark();
          if (at_end() || t_[p_] != '"') return std::nullopt;
          std::optional<std::string> k = quoted();
          if (!k || at_end() || t_[p_] != ':' || !seen.insert(*k).second) return std::nullopt;
          ++p_;
          skip_space(multiline);
          std::optional<Value> item = flow(depth + 1, multiline);
          if (!item) return std::nullopt;
          v.entries().push_back({std::move(*k), key_mark, std::move(*item)});
        } else {
          std::optional<Value> item = flow(depth + 1, multiline);
          if (!item) return std::nullopt;
          v.items().push_back(std::move(*item));
        }
        skip_space(multiline);
        if (at_end()) return std::nullopt;
        if (t_[p_] == close) {
          ++p_;
          return v;
        }
        if (t_[p_] != ',') return std::nullopt;
        ++p_;
      }
    }
    size_t start = p_;
    while (!at_end() && plain_char(t_[p_])) ++p_;
    if (p_ == start || (p_ == start + 1 && t_[start] == '-')) return std::nullopt;  // "-": a list
    std::string text(t_.substr(start, p_ - start));
    try {
      return type_plain_scalar(text, m);
    } catch (const Error&) {
      return std::nullopt;  // parse_yaml says what is wrong
    }
  }

  // A double-quoted string with JSON's escapes; p_ is at the opening quote.
  std::optional<std::string> quoted() {
    ++p_;
    std::string out;
    while (true) {
      if (at_end()) return std::nullopt;
      char c = t_[p_++];
      if (c == '"') break;
      if (c == '\n' || c == '\t' || c == '\r') return std::nullopt;  // YAML folds them
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) return std::nullopt;
      char e = t_[p_++];
      switch (e) {
        case '"':
        case '\\':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          if (t_.size() - p_ < 4) return std::nullopt;
          unsigned cp = 0;
          for (int i = 0; i < 4; ++i) {
            char h = t_[p_++];
            cp <<= 4;
            if (h >= '0' && h <= '9') {
              cp |= static_cast<unsigned>(h - '0');
            } else if (h >= 'a' && h <= 'f') {
              cp |= static_cast<unsigned>(h - 'a' + 10);
            } else if (h >= 'A' && h <= 'F') {
              cp |= static_cast<unsigned>(h - 'A' + 10);
            } else {
              return std::nullopt;
            }
          }
          if (cp >= 0xD800 && cp <= 0xDFFF) return std::nullopt;  // surrogates: parse_yaml decides
          if (cp < 0x80) {
            out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          }
          break;
        }
        default:
          return std::nullopt;
      }
    }
    if (find_invalid_utf8(out) != std::string::npos) return std::nullopt;
    return out;
  }

  std::string_view t_;
  std::shared_ptr<const std::string> source_;
  size_t p_ = 0;
  int line_ = 1;
};

}  // namespace

Value parse_own_yaml(std::string_view text, const std::string& source) {
  if (find_invalid_utf8(text) == std::string_view::npos) {
    if (std::optional<Value> v = OwnYamlReader(text, source).read()) return std::move(*v);
  }
  return parse_yaml(text, source);
}

}  // namespace sweepbench
