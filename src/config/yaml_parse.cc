// yaml_io.h, the reading half: YAML 1.2 core typing, yaml-cpp with limits (a pre-pass counts
// values and depth before anything is built), marks, and files.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "config/yaml_io.h"
#include "text/text.h"

namespace sweepbench {
namespace {

// Deep enough for any config (ours nest three levels); shallow enough that recursion is safe.
constexpr int kMaxDepth = kYamlMaxDepth;
// Aliases let a few lines expand to billions of nodes; no real config comes near this.
constexpr size_t kMaxNodes = 1'000'000;

const char* const kTagStr = "tag:yaml.org,2002:str";
const char* const kTagInt = "tag:yaml.org,2002:int";
const char* const kTagFloat = "tag:yaml.org,2002:float";
const char* const kTagBool = "tag:yaml.org,2002:bool";
const char* const kTagNull = "tag:yaml.org,2002:null";
const char* const kTagSeq = "tag:yaml.org,2002:seq";
const char* const kTagMap = "tag:yaml.org,2002:map";

bool all_of_chars(std::string_view s, std::string_view allowed) {
  return !s.empty() && s.find_first_not_of(allowed) == std::string_view::npos;
}

bool is_core_null(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

std::optional<bool> core_bool(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

// [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+
bool is_core_int(const std::string& s, int* base, std::string_view* digits) {
  std::string_view v(s);
  if (starts_with(v, "0o") && all_of_chars(v.substr(2), "01234567")) {
    *base = 8;
    *digits = v.substr(2);
    return true;
  }
  if (starts_with(v, "0x") && all_of_chars(v.substr(2), "0123456789abcdefABCDEF")) {
    *base = 16;
    *digits = v.substr(2);
    return true;
  }
  std::string_view body = v;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) body.remove_prefix(1);
  if (all_of_chars(body, "0123456789")) {
    *base = 10;
    *digits = v;
    return true;
  }
  return false;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool is_core_float_number(std::string_view v) {
  size_t i = 0;
  auto digits = [&]() {
    size_t start = i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
    return i - start;
  };
  if (i < v.size() && (v[i] == '-' || v[i] == '+')) ++i;
  if (i < v.size() && v[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  } else {
    if (digits() == 0) return false;
    if (i < v.size() && v[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < v.size() && (v[i] == 'e' || v[i] == 'E')) {
    ++i;
    if (i < v.size() && (v[i] == '-' || v[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == v.size();
}

std::optional<double> core_float(const std::string& s) {
  std::string_view v(s);
  bool negative = false;
  std::string_view body = v;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body == ".inf" || body == ".Inf" || body == ".INF") return negative ? -HUGE_VAL : HUGE_VAL;
  if (v == ".nan" || v == ".NaN" || v == ".NAN") return std::nan("");
  if (!is_core_float_number(v)) return std::nullopt;
  return parse_double(v);
}

Mark mark_of(const YAML::Node& node, const Mark& fallback) {
  YAML::Mark m = node.Mark();
  if (m.line < 0 || fallback.source == nullptr) return fallback;
  return Mark{fallback.source, m.line + 1, m.column + 1};
}

Error yaml_error(const Mark& mark, const std::string& message, const std::string& hint = {}) {
  return Error::input(mark, "", message, hint);
}

// Thrown by DocumentStarts at the first node past a limit, so that a huge or deep input stops
// there instead of being built whole first (yaml-cpp's Load builds every node).
struct LimitReached {
  YAML::Mark mark;
  std::string message, hint;
};

// Records where each document's first event is, and counts nodes and nesting as they stream by.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark&) override { pending_ = true; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { note(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { note(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    note(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    note(m);
    enter(m);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    note(m);
    enter(m);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void note(const YAML::Mark& m) {
    if (pending_) starts.push_back(m);
    pending_ = false;
    if (++nodes_ > kMaxNodes) {
      throw LimitReached{m, "more than " + std::to_string(kMaxNodes) + " values",
                         "no sweep needs so many: an axis can list at most --max-points values"};
    }
  }
  void enter(const YAML::Mark& m) {
    if (++depth_ > kMaxDepth) {
      throw LimitReached{m, "nesting deeper than " + std::to_string(kMaxDepth) + " levels",
                         "no config nests so deep; sections are two levels"};
    }
  }
  bool pending_ = false;
  size_t nodes_ = 0;
  int depth_ = 0;
};

// The number of documents, counting at most two. yaml-cpp 0.7's LoadAll loops forever on some
// invalid input (",", ",}": upstream issue 1040, fixed after 0.8.0) because the parser reports a
// new document without consuming anything; here that shows as a second document starting where
// the first did, and is reported as the syntax error it is.
void check_single_document(const std::string& text, const Mark& root) {
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentStarts handler;
  int documents = 0;
  try {
    while (documents < 2 && parser.HandleNextDocument(handler)) ++documents;
  } catch (const LimitReached& limit) {
    throw yaml_error(Mark{root.source, limit.mark.line + 1, limit.mark.column + 1}, limit.message,
                     limit.hint);
  }
  if (documents < 2) return;
  if (handler.starts.size() == 2 && handler.starts[0].pos == handler.starts[1].pos) {
    const YAML::Mark& m = handler.starts[0];
    throw yaml_error(Mark{root.source, m.line + 1, m.column + 1},
                     "YAML syntax error: unexpected character",
                     "a stray ',', '}' or ']' outside a flow collection?");
  }
  throw yaml_error(handler.starts.size() == 2
                       ? Mark{root.source, handler.starts[1].line + 1, handler.starts[1].column + 1}
                       : root,
                   "more than one YAML document", "remove the '---' separator");
}

class Converter {
 public:
  explicit Converter(Mark root) : root_(std::move(root)) {}

  Value convert(const YAML::Node& node, const Mark& parent, int depth) {
    Mark mark = mark_of(node, parent);
    if (depth > kMaxDepth) {
      throw yaml_error(mark, "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    if (++nodes_ > kMaxNodes) {
      throw yaml_error(
          mark, "more than " + std::to_string(kMaxNodes) + " values (after expanding aliases)");
    }
    const std::string& tag = node.Tag();
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        if (tag == kTagStr) return Value::string("", mark);
        return Value::null(mark);
      case YAML::NodeType::Scalar:
        return convert_scalar(node.Scalar(), tag, mark);
      case YAML::NodeType::Sequence: {
        if (tag != "?" && tag != "!" && tag != kTagSeq && !tag.empty()) {
          throw yaml_error(mark, "unsupported tag '" + tag + "' on a list");
        }
        Value list = Value::list(mark);
        for (const YAML::Node& item : node) {
          list.items().push_back(convert(item, mark, depth + 1));
        }
        return list;
      }
      case YAML::NodeType::Map: {
        if (tag != "?" && tag != "!" && tag != kTagMap && !tag.empty()) {
          throw yaml_error(mark, "unsupported tag '" + tag + "' on a mapping");
        }
        Value map = Value::map(mark);
        std::set<std::string> seen;
        for (auto it = node.begin(); it != node.end(); ++it) {
          const YAML::Node key = it->first;
          const YAML::Node item = it->second;
          Mark key_mark = mark_of(key, mark);
          if (key.IsMap() || key.IsSequence()) {
            throw yaml_error(key_mark, "a mapping key must be a plain name, not " +
                                           std::string(key.IsMap() ? "a mapping" : "a list"));
          }
          std::string name = key.IsScalar() ? key.Scalar() : std::string();
          check_decoded(name, key_mark);
          if (!seen.insert(name).second) {
            throw yaml_error(key_mark, "duplicate key '" + name + "'",
                             "each key may appear once per mapping");
          }
          ++nodes_;
          map.entries().push_back(Value::Entry{name, key_mark, convert(item, key_mark, depth + 1)});
        }
        return map;
      }
    }
    return Value::null(mark);
  }

 private:
  // yaml-cpp 0.7 decodes the escapes \N and \_ to the single bytes 0x85 and 0xA0, not UTF-8;
  // a string that is not valid UTF-8 would not survive the canonical form.
  static void check_decoded(const std::string& text, const Mark& mark) {
    if (find_invalid_utf8(text) != std::string::npos) {
      throw yaml_error(mark, "the decoded string is not valid UTF-8",
                       "the escapes \\N and \\_ are not supported; write the characters "
                       "themselves");
    }
  }

  Value convert_scalar(const std::string& text, const std::string& tag, const Mark& mark) {
    check_decoded(text, mark);
    if (tag == "?" || tag.empty()) return type_plain_scalar(text, mark);
    if (tag == "!" || tag == kTagStr) return Value::string(text, mark);
    if (tag == kTagNull) {
      if (!is_core_null(text)) throw yaml_error(mark, "!!null value '" + text + "' is not null");
      return Value::null(mark);
    }
    if (tag == kTagBool) {
      if (auto b = core_bool(text)) return Value::boolean(*b, mark);
      throw yaml_error(mark, "!!bool value '" + text + "' is not true or false");
    }
    if (tag == kTagInt) {
      Value v = type_plain_scalar(text, mark);
      if (v.is_int()) return v;
      throw yaml_error(mark, "!!int value '" + text + "' is not an integer");
    }
    if (tag == kTagFloat) {
      Value v = type_plain_scalar(text, mark);
      if (v.is_int()) return Value::real(static_cast<double>(v.as_int()), mark);
      if (v.is_float()) return v;
      throw yaml_error(mark, "!!float value '" + text + "' is not a number");
    }
    throw yaml_error(mark, "unsupported tag '" + tag + "'",
                     "only !!str, !!int, !!float, !!bool and !!null are understood");
  }

  Mark root_;
  size_t nodes_ = 0;
};

// Sweep files, defaults files and configs are a few kilobytes: the limit keeps /dev/zero, a
// dataset given by mistake or a runaway generator from being read into memory whole.
constexpr std::uintmax_t kMaxInputBytes = std::uintmax_t{64} << 20;

Error file_error(const std::string& display, const std::string& message, const std::string& hint) {
  return Error(ErrorKind::kInput, Mark::in(display), "", message, hint);
}

// Only regular files are read (a directory read as a stream is empty, and a FIFO blocks), and
// only up to kMaxInputBytes.
std::string read_file_text(const std::string& path, const std::string& display) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) {
      throw file_error(display, "no such file", "check the path (relative paths start here)");
    }
    throw file_error(display, std::string("cannot read the file: ") + std::strerror(err),
                     "check that it exists and is readable");
  }
  if (S_ISDIR(st.st_mode)) {
    throw file_error(display, "is a directory, not a YAML file", "give the path of the file");
  }
  if (!S_ISREG(st.st_mode)) {
    throw file_error(display, "is not a regular file (a FIFO, socket or device), not a YAML file",
                     "give the path of a YAML file");
  }
  auto too_big = [&] {
    return file_error(display, "is larger than 64 MiB, which no sweep file or config is",
                      "is it the file you meant?");
  };
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxInputBytes) throw too_big();
  // O_NONBLOCK: should the path become a FIFO after the check, reading does not hang.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    throw file_error(display, std::string("cannot read the file: ") + std::strerror(errno),
                     "check that it is readable");
  }
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      throw file_error(display, std::string("cannot read the file: ") + std::strerror(err), "");
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxInputBytes) {
      ::close(fd);
      throw too_big();
    }
  }
  ::close(fd);
  return text;
}

}  // namespace

Value type_plain_scalar(const std::string& text, Mark mark) {
  if (is_core_null(text)) return Value::null(std::move(mark));
  if (auto b = core_bool(text)) return Value::boolean(*b, std::move(mark));
  int base = 10;
  std::string_view digits;
  if (is_core_int(text, &base, &digits)) {
    if (auto i = parse_int64(digits, base)) return Value::integer(*i, std::move(mark));
    throw yaml_error(mark, "integer " + text + " does not fit in 64 bits");
  }
  if (auto f = core_float(text)) return Value::real(*f, std::move(mark));
  return Value::string(text, std::move(mark));
}

namespace {

// Where a position is, 1-based, for messages about the raw text.
Mark text_mark(const Mark& root, std::string_view text, size_t at) {
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return Mark{root.source, line, static_cast<int>(at - line_start) + 1};
}

// The text of a 1-based line, without its end.
std::string_view line_of(std::string_view text, int line) {
  size_t start = 0;
  for (int l = 1; l < line && start != std::string_view::npos; ++l) {
    start = text.find('\n', start);
    if (start != std::string_view::npos) ++start;
  }
  if (start == std::string_view::npos || start > text.size()) return {};
  size_t end = text.find('\n', start);
  return text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

}  // namespace

Value parse_yaml(std::string_view text, const std::string& source) {
  Mark root = Mark::in(source);
  // Control characters (NUL first of all) mean a binary file, not YAML: say so, where, and
  // without echoing what follows.
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
      char byte[8];
      std::snprintf(byte, sizeof(byte), "0x%02x", c);
      throw yaml_error(
          text_mark(root, text, i),
          std::string("a control character (byte ") + byte + "), which a YAML file cannot hold",
          "is this a text file? give the sweep file or config itself");
    }
  }
  // YAML is Unicode text; yaml-cpp lets stray bytes through, which would then not survive the
  // canonical form. Refuse them here, where the position is still known.
  size_t bad = find_invalid_utf8(text);
  if (bad != std::string_view::npos) {
    char byte[8];
    std::snprintf(byte, sizeof(byte), "0x%02x", static_cast<unsigned char>(text[bad]));
    throw yaml_error(text_mark(root, text, bad),
                     std::string("the text is not valid UTF-8 (byte ") + byte + ")",
                     "save the file as UTF-8");
  }
  YAML::Node doc;
  try {
    std::string owned(text);
    check_single_document(owned, root);
    doc = YAML::Load(owned);
  } catch (const YAML::Exception& e) {
    Mark at = root;
    std::string hint;
    if (e.mark.line >= 0) {
      at = Mark{root.source, e.mark.line + 1, e.mark.column + 1};
      // yaml-cpp's words for a tab ("illegal map value", "end of map not found") never say tab.
      for (int l = std::max(1, at.line - 1); l <= at.line; ++l) {
        if (line_of(text, l).find('\t') != std::string_view::npos) {
          hint = "line " + std::to_string(l) +
                 " holds a tab: YAML indents with spaces only; replace the tabs with spaces";
          break;
        }
      }
    }
    throw yaml_error(at, "YAML syntax error: " + e.msg, hint);
  }
  try {
    return Converter(root).convert(doc, root, 0);
  } catch (const YAML::Exception& e) {
    throw yaml_error(root, std::string("YAML error: ") + e.msg);
  }
}

Value load_yaml_file(const std::string& path, const std::string& display) {
  std::string name = display.empty() ? path : display;
  return parse_yaml(read_file_text(path, name), name);
}

}  // namespace sweepbench
