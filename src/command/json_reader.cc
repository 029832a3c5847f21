#include "command/json_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <istream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <streambuf>

#include "os/fs.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {

void JsonPatterns::add(const std::vector<std::string>& tokens, bool records_too) {
  patterns_.push_back({tokens, false});
  // json_values reads a list at the top as its records, each with the whole pointer
  // (llama-bench -o json), when the first token is not "*" and does not index the list (an
  // index past its end included: `/1/a` on a list of one record reads the record's "1").
  if (records_too && !tokens.empty() && tokens.front() != "*") {
    std::vector<std::string> below = {"*"};
    below.insert(below.end(), tokens.begin(), tokens.end());
    patterns_.push_back({below, true});
  }
}

namespace {

bool token_matches(const std::string& token, const std::string& element, bool is_index) {
  if (token == "*") return true;
  if (!is_index) return token == element;
  std::optional<std::int64_t> i = parse_int64(token);
  return i && std::to_string(*i) == element;
}

}  // namespace

bool JsonPatterns::agrees(const Pattern& p, const std::vector<std::string>& path,
                          const std::vector<bool>& index) {
  if (p.root_list_only && !path.empty() && !index[0]) return false;
  const size_t n = std::min(path.size(), p.tokens.size());
  for (size_t i = 0; i < n; ++i) {
    if (!token_matches(p.tokens[i], path[i], index[i])) return false;
  }
  return true;
}

JsonPatterns::Reach JsonPatterns::reach(const std::vector<std::string>& path,
                                        const std::vector<bool>& index) const {
  Reach best = Reach::kNone;
  for (const Pattern& p : patterns_) {
    if (!agrees(p, path, index)) continue;
    if (path.size() >= p.tokens.size()) return Reach::kWhole;
    best = Reach::kPrefix;
  }
  return best;
}

std::int64_t JsonPatterns::last_index(const std::vector<std::string>& path,
                                      const std::vector<bool>& index) const {
  std::int64_t last = -1;
  for (const Pattern& p : patterns_) {
    if (p.tokens.size() <= path.size() || !agrees(p, path, index)) continue;
    const std::string& t = p.tokens[path.size()];
    if (t == "*") return std::numeric_limits<std::int64_t>::max();
    if (std::optional<std::int64_t> i = parse_int64(t); i && *i >= 0) last = std::max(last, *i);
  }
  return last;
}

namespace {

using Reach = JsonPatterns::Reach;

// The text nlohmann::json parses: the bytes `read` gives, with Python's NaN, Infinity and
// -Infinity outside strings turned into the strings "NaN", "Infinity" and "-Infinity" (JSON has
// no such numbers; json.dump writes them). Asks `stop` every 16 reads.
class JsonTextBuf : public std::streambuf {
 public:
  using Read = std::function<ssize_t(char*, size_t)>;  // <0: errno set; 0: the end
  // `chunk`: the bytes read at a time (a line's text needs no 64 KiB buffer).
  JsonTextBuf(Read read, JsonStop stop, size_t chunk = kChunk)
      : read_(std::move(read)), stop_(std::move(stop)), chunk_(std::max<size_t>(chunk, 16)) {}
  int error() const { return error_; }
  bool stopped() const { return stopped_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    out_.clear();
    while (out_.size() < chunk_) {
      if (pos_ == end_ && !fill(1)) break;
      const char c = raw_[pos_];
      if (in_string_) {
        out_ += c;
        ++pos_;
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
        continue;
      }
      if (c == '"') {
        in_string_ = true;
      } else if (c == 'N' || c == 'I' || c == '-') {
        fill(9);  // the longest word, -Infinity
        const std::string_view ahead(raw_.data() + pos_, end_ - pos_);
        bool replaced = false;
        for (std::string_view word : {"NaN", "Infinity", "-Infinity"}) {
          if (ahead.substr(0, word.size()) == word) {
            out_ += '"';
            out_ += word;
            out_ += '"';
            pos_ += word.size();
            replaced = true;
            break;
          }
        }
        if (replaced) continue;
      }
      out_ += c;
      ++pos_;
    }
    if (out_.empty()) return traits_type::eof();
    setg(out_.data(), out_.data(), out_.data() + out_.size());
    return traits_type::to_int_type(*gptr());
  }

 private:
  static constexpr size_t kChunk = size_t{1} << 16;

  // Until `want` bytes are ahead of pos_, or the end; false when none is.
  bool fill(size_t want) {
    while (end_ - pos_ < want && !eof_) {
      if (pos_ > 0) {
        std::memmove(raw_.data(), raw_.data() + pos_, end_ - pos_);
        end_ -= pos_;
        pos_ = 0;
      }
      if (raw_.size() < chunk_) raw_.resize(chunk_);
      if (stop_ && ++reads_ % 16 == 0 && stop_()) {
        stopped_ = true;
        eof_ = true;
        break;
      }
      ssize_t n = read_(raw_.data() + end_, raw_.size() - end_);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        error_ = errno;
        eof_ = true;
      } else if (n == 0) {
        eof_ = true;
      } else {
        end_ += static_cast<size_t>(n);
      }
    }
    return end_ > pos_;
  }

  Read read_;
  JsonStop stop_;
  size_t chunk_;
  std::vector<char> raw_;
  size_t pos_ = 0, end_ = 0, reads_ = 0;
  bool eof_ = false, in_string_ = false, escaped_ = false, stopped_ = false;
  int error_ = 0;
  std::string out_;
};

// How deep the kept part of a document may nest: a Value is freed recursively, and a million
// nested lists kept whole would overflow the stack. What is not kept may nest as deep as it likes
// (it is counted, not held).
constexpr std::size_t kMaxKeptDepth = 1000;

// nlohmann::json's SAX events into a Value that holds what the patterns reach (JsonPatterns).
class PrunedBuilder {
 public:
  using number_integer_t = std::int64_t;
  using number_unsigned_t = std::uint64_t;
  using number_float_t = double;
  using string_t = std::string;
  using binary_t = nlohmann::json::binary_t;

  explicit PrunedBuilder(const JsonPatterns& patterns) : patterns_(patterns) {}

  bool null() { return scalar(Value::null()); }
  bool boolean(bool b) { return scalar(Value::boolean(b)); }
  bool number_integer(std::int64_t i) { return scalar(Value::integer(i)); }
  bool number_unsigned(std::uint64_t u) {
    return scalar(u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                      ? Value::integer(static_cast<std::int64_t>(u))
                      : Value::real(static_cast<double>(u)));
  }
  bool number_float(double f, const std::string&) { return scalar(Value::real(f)); }
  bool string(std::string& s) { return scalar(Value::string(std::move(s))); }
  bool binary(binary_t&) { return scalar(Value::null()); }  // not in JSON text
  bool key(std::string& k) {
    if (skip_ == 0) frames_.back().key = std::move(k);
    return true;
  }
  bool start_object(std::size_t) { return open(Value::map()); }
  bool start_array(std::size_t) { return open(Value::list()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

  bool done() const { return done_; }
  bool too_deep() const { return too_deep_; }
  bool root_is_list() const { return root_list_; }
  Value& root() { return root_; }
  // When the document broke off inside a list at the top: its items that ended.
  std::vector<Value>* complete_items() {
    return root_list_ && !frames_.empty() ? &frames_.front().value.items() : nullptr;
  }

 private:
  struct Frame {
    Value value;
    Reach reach = Reach::kPrefix;
    std::string key;       // a map's member being read
    std::size_t next = 0;  // a list's next item
    // A list's items past this index are reached by no pattern: not even their place is kept.
    std::size_t last_wanted = std::numeric_limits<std::size_t>::max();
    bool wants_items = true;
  };

  // How far the patterns reach the next child of the top frame (the root when there is none).
  Reach child_reach() {
    if (frames_.empty()) return Reach::kPrefix;  // the root is always read
    const Frame& top = frames_.back();
    if (top.reach == Reach::kWhole) return Reach::kWhole;
    const bool in_list = top.value.is_list();
    path_.push_back(in_list ? std::to_string(top.next) : top.key);
    index_.push_back(in_list);
    Reach r = patterns_.reach(path_, index_);
    path_.pop_back();
    index_.pop_back();
    return r;
  }

  // A child that is not kept: in a list it keeps its place (as null), so that indices hold.
  void pass_over() {
    Frame& top = frames_.back();
    if (!top.value.is_list()) return;
    if (top.wants_items && top.next <= top.last_wanted) top.value.items().push_back(Value::null());
    ++top.next;
  }

  void add(Value v) {
    if (frames_.empty()) {
      root_ = std::move(v);
      done_ = true;
      return;
    }
    Frame& top = frames_.back();
    if (top.value.is_list()) {
      top.value.items().push_back(std::move(v));
      ++top.next;
    } else {
      top.value.entries().push_back({std::move(top.key), Mark(), std::move(v)});
    }
  }

  bool scalar(Value v) {
    if (skip_ > 0) return true;
    if (frames_.empty()) {
      add(std::move(v));
      return true;
    }
    if (child_reach() == Reach::kNone) {
      pass_over();
    } else {
      add(std::move(v));
    }
    return true;
  }

  bool open(Value container) {
    if (skip_ > 0) {
      ++skip_;
      return true;
    }
    if (frames_.size() >= kMaxKeptDepth) {
      too_deep_ = true;
      return false;  // ends the parse
    }
    const Reach r = child_reach();
    if (r == Reach::kNone) {
      pass_over();
      skip_ = 1;
      return true;
    }
    if (frames_.empty()) {
      root_list_ = container.is_list();
    } else {
      const Frame& top = frames_.back();
      path_.push_back(top.value.is_list() ? std::to_string(top.next) : top.key);
      index_.push_back(top.value.is_list());
    }
    Frame f;
    f.value = std::move(container);
    f.reach = r;
    if (f.value.is_list() && r == Reach::kPrefix) {
      const std::int64_t last = patterns_.last_index(path_, index_);
      f.last_wanted = last < 0 ? 0 : static_cast<std::size_t>(last);
      f.wants_items = last >= 0;
    }
    frames_.push_back(std::move(f));
    return true;
  }

  bool close() {
    if (skip_ > 0) {
      --skip_;
      return true;
    }
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    if (!frames_.empty()) {
      path_.pop_back();
      index_.pop_back();
    }
    add(std::move(f.value));
    return true;
  }

  const JsonPatterns& patterns_;
  std::vector<Frame> frames_;
  std::vector<std::string> path_;  // the path of the top frame
  std::vector<bool> index_;
  std::size_t skip_ = 0;  // depth inside a container that is not kept
  Value root_;
  bool done_ = false, root_list_ = false, too_deep_ = false;
};

struct Parsed {
  bool ok = false;         // one whole document, nothing after it
  bool root_done = false;  // a whole document came first (then more: JSON lines)
  bool stopped = false;
  int error = 0;
};

Parsed parse_with(JsonTextBuf& buf, PrunedBuilder& builder) {
  std::istream in(&buf);
  Parsed p;
  try {
    p.ok = nlohmann::json::sax_parse(in, &builder, nlohmann::json::input_format_t::json, true);
  } catch (const nlohmann::json::exception&) {
    p.ok = false;  // what parse_error did not stop (it stops every syntax error)
  }
  p.root_done = builder.done();
  p.stopped = buf.stopped();
  p.error = buf.error();
  return p;
}

// A JSON line longer than this (1 MiB) is not read as one, as a metric's pattern reads only a
// line's first MiB.
constexpr size_t kMaxLine = size_t{1} << 20;

}  // namespace

bool parse_json_text(const std::string& text, const JsonPatterns& patterns, Value* out) {
  size_t at = 0;
  JsonTextBuf buf(
      [&](char* to, size_t n) {
        size_t k = std::min(n, text.size() - at);
        std::memcpy(to, text.data() + at, k);
        at += k;
        return static_cast<ssize_t>(k);
      },
      {}, text.size() + 16);
  PrunedBuilder builder(patterns);
  if (!parse_with(buf, builder).ok) return false;
  *out = std::move(builder.root());
  return true;
}

JsonFileRead read_json_documents(const std::string& path, const JsonPatterns& patterns,
                                 JsonLines lines, const std::function<void(const Value&)>& sink,
                                 const JsonStop& stop) {
  JsonFileRead result;
  int fd = open_regular_file(path);
  if (fd < 0) {
    result.exists = false;
    return result;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  auto read_fd = [fd](char* to, size_t n) { return ::read(fd, to, n); };

  // One document, however large, streamed.
  {
    JsonTextBuf buf(read_fd, stop);
    PrunedBuilder builder(patterns);
    Parsed p = parse_with(buf, builder);
    if (p.error != 0) {
      result.problem = std::string("cannot be read: ") + std::strerror(p.error);
      return result;
    }
    if (p.ok) {
      sink(builder.root());
      result.documents = 1;
      return result;
    }
    result.stopped = p.stopped;
    if (builder.too_deep()) {
      result.problem = "nests deeper than " + std::to_string(kMaxKeptDepth) +
                       " levels where a metric's pointer reaches: not read";
      return result;
    }
    if (p.root_done && builder.root_is_list()) {
      // A whole list of records, then something else (a wrapper's "done" after llama-bench
      // -o json): the records, as before (a pretty-printed list read line by line gives none).
      std::vector<Value>& items = builder.root().items();
      if (std::any_of(items.begin(), items.end(), [](const Value& v) { return v.is_map(); })) {
        for (const Value& item : items) sink(item);
        result.documents = items.size();
        return result;
      }
    }
    if (!p.root_done) {
      // Cut short: a list at the top gives its items that ended (a program killed while it
      // wrote llama-bench -o json's records); anything else is read as JSON lines.
      if (std::vector<Value>* items = builder.complete_items(); items != nullptr) {
        for (const Value& item : *items) {
          if (item.is_map()) ++result.salvaged;
        }
        if (result.salvaged > 0) {
          for (const Value& item : *items) sink(item);
          result.documents = items->size();
          return result;
        }
      }
      if (p.stopped) return result;
    }
  }

  // JSON lines: a document a line.
  if (::lseek(fd, 0, SEEK_SET) != 0) {
    result.problem = std::string("cannot be read again: ") + std::strerror(errno);
    return result;
  }
  std::string line;
  bool cut = false;
  size_t number = 0, reads = 0;
  char buf[1 << 16];
  auto take = [&]() {
    ++number;
    std::string t = trim(line);
    line.clear();
    const bool was_cut = cut;
    cut = false;
    if (t.empty()) return true;
    if (lines == JsonLines::kAmongText && t[0] != '{' && t[0] != '[') return true;
    Value doc;
    if (!was_cut && parse_json_text(t, patterns, &doc)) {
      sink(doc);
      ++result.documents;
      return true;
    }
    if (lines == JsonLines::kAmongText) return true;  // not JSON after all (a Python dict)
    result.problem = "line " + std::to_string(number) +
                     (was_cut ? " is longer than 1 MiB: not read as JSON" : " is not JSON");
    return false;
  };
  while (true) {
    if (stop && ++reads % 16 == 0 && stop()) {
      result.stopped = true;
      return result;  // no last line: it would be cut where the reading stopped
    }
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      result.problem = std::string("cannot be read: ") + std::strerror(errno);
      return result;
    }
    if (n == 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        if (!take()) return result;
      } else if (line.size() < kMaxLine) {
        line += buf[i];
      } else {
        cut = true;
      }
    }
  }
  if (!line.empty() || cut) take();
  return result;
}

}  // namespace sweepbench
