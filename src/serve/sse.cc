// serve/sse.h: the event stream's lines, events and JSON chunks.
#include "serve/sse.h"

#include <cstdio>
#include <utility>

#include "config/value.h"
#include "config/yaml_io.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench::serve {
namespace {

// A short, printable excerpt of the input for messages: at most 60 bytes, control characters and
// bytes outside ASCII as \xNN (the input may be anything a broken server sends).
std::string excerpt(std::string_view s) {
  constexpr size_t kMax = 60;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMax) out += "...";
  return "'" + out + "'";
}

bool is_blank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t') return false;
  }
  return true;
}

// A string field that may be absent or null (""), else must be a string.
bool optional_string(const Value& map, std::string_view key, const std::string& where,
                     std::string& out, std::string& why) {
  const Value* v = map.find(key);
  if (v == nullptr || v->is_null()) return true;
  if (!v->is_string()) {
    why = where + std::string(key) + " is " + v->type_name() + ", not a string";
    return false;
  }
  out = v->as_string();
  return true;
}

bool optional_count(const Value& map, std::string_view key, std::int64_t& out, std::string& why) {
  const Value* v = map.find(key);
  if (v == nullptr || v->is_null()) return true;
  if (!v->is_int() || v->as_int() < 0) {
    why = "usage." + std::string(key) + " is " + v->describe() + ", not a count";
    return false;
  }
  out = v->as_int();
  return true;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The code unit of a `\uXXXX` escape at s[i] (the backslash), or -1.
long escape_at(std::string_view s, size_t i) {
  if (i + 6 > s.size() || s[i] != '\\' || s[i + 1] != 'u') return -1;
  long unit = 0;
  for (size_t j = i + 2; j < i + 6; ++j) {
    int d = hex_digit(s[j]);
    if (d < 0) return -1;
    unit = unit * 16 + d;
  }
  return unit;
}

}  // namespace

std::string join_surrogate_pairs(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (!in_string) {
      in_string = c == '"';
      out += c;
      continue;
    }
    if (c == '"') {
      in_string = false;
      out += c;
      continue;
    }
    if (c != '\\') {
      out += c;
      continue;
    }
    long high = escape_at(s, i);
    long low = high >= 0xD800 && high <= 0xDBFF ? escape_at(s, i + 6) : -1;
    if (low >= 0xDC00 && low <= 0xDFFF) {
      unsigned long cp = 0x10000 + ((static_cast<unsigned long>(high) - 0xD800) << 10) +
                         (static_cast<unsigned long>(low) - 0xDC00);
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
      i += 11;
      continue;
    }
    // Any other escape: its backslash and the character after it, so that `\"` and `\\` neither
    // end the string nor start an escape.
    out += c;
    if (i + 1 < s.size()) out += s[++i];
  }
  return out;
}

const char* to_string(StreamError::Kind kind) {
  switch (kind) {
    case StreamError::Kind::kNotSse:
      return "not-sse";
    case StreamError::Kind::kTooLarge:
      return "too-large";
    case StreamError::Kind::kInvalidUtf8:
      return "invalid-utf8";
    case StreamError::Kind::kBadJson:
      return "bad-json";
    case StreamError::Kind::kBadChunk:
      return "bad-chunk";
    case StreamError::Kind::kAfterDone:
      return "after-done";
    case StreamError::Kind::kUnfinished:
      return "unfinished";
  }
  return "unknown";
}

std::optional<SseEvent> read_chunk(std::string_view payload, std::string& why, bool& bad_json) {
  bad_json = false;
  size_t first = payload.find_first_not_of(" \t");
  size_t last = payload.find_last_not_of(" \t");
  if (first == std::string_view::npos || payload[first] != '{' || payload[last] != '}') {
    bad_json = true;
    why = "data is not a JSON object: " + excerpt(payload);
    return std::nullopt;
  }
  std::string_view object = payload.substr(first, last + 1 - first);
  std::string joined;
  if (object.find("\\u") != std::string_view::npos) {
    joined = join_surrogate_pairs(object);
    object = joined;
  }
  Value v;
  try {
    v = parse_own_yaml(object, "SSE data");
  } catch (const Error& e) {
    bad_json = true;
    why = "data is not JSON (" + e.message() + "): " + excerpt(payload);
    return std::nullopt;
  }
  if (!v.is_map()) {
    bad_json = true;
    why = "data is not a JSON object: " + excerpt(payload);
    return std::nullopt;
  }
  SseEvent ev;
  // An error object, in OpenAI's shape or vLLM's older top-level one.
  const Value* err = v.find("error");
  const Value* kind = v.find("object");
  bool top_level_error = kind != nullptr && kind->is_string() && kind->as_string() == "error";
  if ((err != nullptr && !err->is_null()) || top_level_error) {
    const Value& e = top_level_error ? v : *err;
    if (!e.is_map()) {
      why = "error is " + e.type_name() + ", not an object";
      return std::nullopt;
    }
    ev.kind = SseEvent::Kind::kError;
    if (!optional_string(e, "message", "error.", ev.error.message, why) ||
        !optional_string(e, "type", "error.", ev.error.type, why)) {
      return std::nullopt;
    }
    if (const Value* code = e.find("code"); code != nullptr && code->is_scalar()) {
      ev.error.code = scalar_text(*code);
    }
    return ev;
  }
  ev.kind = SseEvent::Kind::kChunk;
  if (const Value* choices = v.find("choices"); choices != nullptr && !choices->is_null()) {
    if (!choices->is_list()) {
      why = "choices is " + choices->type_name() + ", not a list";
      return std::nullopt;
    }
    if (!choices->items().empty()) {
      const Value& c = choices->items().front();
      if (!c.is_map()) {
        why = "choices[0] is " + c.type_name() + ", not an object";
        return std::nullopt;
      }
      ev.has_choice = true;
      if (const Value* delta = c.find("delta"); delta != nullptr && !delta->is_null()) {
        if (!delta->is_map()) {
          why = "choices[0].delta is " + delta->type_name() + ", not an object";
          return std::nullopt;
        }
        if (!optional_string(*delta, "content", "choices[0].delta.", ev.text, why)) {
          return std::nullopt;
        }
      } else if (!optional_string(c, "text", "choices[0].", ev.text, why)) {
        return std::nullopt;
      }
      if (!optional_string(c, "finish_reason", "choices[0].", ev.finish_reason, why)) {
        return std::nullopt;
      }
    }
  }
  if (const Value* usage = v.find("usage"); usage != nullptr && !usage->is_null()) {
    if (!usage->is_map()) {
      why = "usage is " + usage->type_name() + ", not an object";
      return std::nullopt;
    }
    Usage u;
    if (!optional_count(*usage, "prompt_tokens", u.prompt_tokens, why) ||
        !optional_count(*usage, "completion_tokens", u.completion_tokens, why)) {
      return std::nullopt;
    }
    ev.usage = u;
  }
  return ev;
}

SseParser::SseParser(SseLimits limits) : limits_(limits) {}

std::optional<StreamError> SseParser::fail(StreamError::Kind kind, std::string message,
                                           size_t offset) {
  error_ = StreamError{kind, std::move(message), offset};
  line_.clear();
  line_.shrink_to_fit();
  data_.clear();
  data_.shrink_to_fit();
  return error_;
}

std::optional<StreamError> SseParser::feed(std::string_view bytes, double time_s,
                                           std::vector<SseEvent>& out) {
  if (error_) return error_;
  size_t i = 0;
  while (i < bytes.size()) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (bytes[i] == '\n') {
        ++i;
        ++offset_;
        continue;
      }
    }
    // The rest of the line in this piece: up to CR or LF.
    size_t end = i;
    while (end < bytes.size() && bytes[end] != '\n' && bytes[end] != '\r') ++end;
    if (line_.empty()) line_start_ = offset_;
    // Bounded memory: the unfinished line counts against the event's limit as it grows.
    if (event_bytes_ + line_.size() + (end - i) > limits_.max_event_bytes) {
      return fail(StreamError::Kind::kTooLarge,
                  "an event is longer than " + std::to_string(limits_.max_event_bytes) +
                      " bytes (it starts " +
                      excerpt(has_data_ ? data_ : line_ + std::string(bytes.substr(i, end - i))) +
                      ")",
                  has_data_ ? event_start_ : line_start_);
    }
    line_.append(bytes.substr(i, end - i));
    offset_ += end - i;
    i = end;
    if (i == bytes.size()) break;  // the line goes on in the next piece
    skip_lf_ = bytes[i] == '\r';
    ++i;
    ++offset_;
    std::string line = std::move(line_);
    line_.clear();
    if (auto e = take_line(line, time_s, out)) return e;
  }
  return std::nullopt;
}

std::optional<StreamError> SseParser::take_line(std::string_view line, double time_s,
                                                std::vector<SseEvent>& out) {
  if (at_start_) {
    at_start_ = false;
    if (line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);  // a byte-order mark
  }
  if (line.empty()) return dispatch(out);
  if (size_t bad = find_invalid_utf8(line); bad != std::string_view::npos) {
    return fail(StreamError::Kind::kInvalidUtf8,
                "a line is not UTF-8 (byte " + std::to_string(bad) + "): " + excerpt(line),
                line_start_);
  }
  if (line.front() == ':') return std::nullopt;  // a comment (servers' keep-alive pings)
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (done_) {
      return fail(StreamError::Kind::kAfterDone, "data after [DONE]: " + excerpt(line),
                  line_start_);
    }
    if (!has_data_) event_start_ = line_start_;
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
    data_time_s_ = time_s;
    event_bytes_ += line.size() + 1;
    return std::nullopt;
  }
  if (field == "event" || field == "id" || field == "retry") {
    event_bytes_ += line.size() + 1;
    return std::nullopt;
  }
  // Whitespace alone is no field either, but some servers pad their keep-alives with it.
  if (is_blank(line)) return std::nullopt;
  return fail(StreamError::Kind::kNotSse, "a line that is no SSE field: " + excerpt(line),
              line_start_);
}

std::optional<StreamError> SseParser::dispatch(std::vector<SseEvent>& out) {
  event_bytes_ = 0;
  if (!has_data_) return std::nullopt;  // an event of comments or `event:` alone
  has_data_ = false;
  std::string data = std::move(data_);
  data_.clear();
  SseEvent ev;
  if (data == "[DONE]") {
    ev.kind = SseEvent::Kind::kDone;
    ev.time_s = data_time_s_;
    done_ = true;
    out.push_back(std::move(ev));
    return std::nullopt;
  }
  std::string why;
  bool bad_json = false;
  std::optional<SseEvent> chunk = read_chunk(data, why, bad_json);
  if (!chunk) {
    return fail(bad_json ? StreamError::Kind::kBadJson : StreamError::Kind::kBadChunk, why,
                event_start_);
  }
  chunk->time_s = data_time_s_;
  out.push_back(std::move(*chunk));
  return std::nullopt;
}

std::optional<StreamError> SseParser::finish(double time_s, std::vector<SseEvent>& out) {
  if (error_) return error_;
  if (!line_.empty()) {
    if (line_ == "data: [DONE]" || line_ == "data:[DONE]") {
      // Servers that close right after [DONE] without its newline: the event is whole.
      std::string line = std::move(line_);
      line_.clear();
      if (auto e = take_line(line, time_s, out)) return e;
    } else {
      return fail(StreamError::Kind::kUnfinished,
                  "the stream ended inside a line: " + excerpt(line_), line_start_);
    }
  }
  return dispatch(out);
}

}  // namespace sweepbench::serve
