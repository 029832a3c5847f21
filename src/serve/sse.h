// An incremental parser of an OpenAI-compatible streaming answer: Server-Sent Events (the WHATWG
// HTML standard's event stream) whose `data:` payloads are the JSON chunks of /v1/completions
// (`choices[0].text`) and /v1/chat/completions (`choices[0].delta.content`), the `usage` chunk,
// `data: [DONE]` and a server's `error` object.
//
// It is fed the body's bytes as they arrive, cut anywhere (inside a line, a CRLF, a UTF-8
// character), each piece with the time it arrived, and gives one event per SSE event. It holds
// at most one unfinished event (limits.max_event_bytes), so a hostile or broken server costs
// bounded memory. Anything it cannot read is a StreamError saying what and where, never a crash;
// after one the parser stays failed.
//
// Left out: HTTP itself (status, headers, chunked transfer coding: the caller gives the body),
// the `event:`, `id:` and `retry:` fields' meanings (read and ignored: OpenAI-compatible servers
// send only `data:`), and choices other than the first (n > 1).
//
// JSON is read with config's parse_own_yaml (JSON is YAML 1.2 flow), not a JSON library. A payload
// must be a `{...}` object; a YAML-only spelling inside it (an unquoted key) is accepted, which no
// server sends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sweepbench::serve {

struct SseLimits {
  // One event's bytes (its lines, their `data: ` prefixes included). A chunk of a long answer is
  // a few hundred bytes; 1 MiB leaves room for logprobs while bounding a stream with no newline.
  size_t max_event_bytes = size_t{1} << 20;
};

struct Usage {
  std::int64_t prompt_tokens = -1;      // -1: the server did not say
  std::int64_t completion_tokens = -1;  // -1: the server did not say
};

// A server's error object: OpenAI's `{"error": {"message", "type", "code"}}`, or vLLM's older
// top-level `{"object": "error", "message", "type", "code"}`.
struct ServerError {
  std::string message;
  std::string type;
  std::string code;  // as text: servers send an integer (400) or a string ("context_length")
};

struct SseEvent {
  enum class Kind {
    kChunk,  // a JSON chunk: text and finish reason of choices[0], usage, or both
    kDone,   // data: [DONE]
    kError,  // a JSON chunk holding an error object
  };
  Kind kind = Kind::kChunk;
  // When the event's last `data:` line was complete (the arrival time of the piece holding its
  // line end), not when the blank line that ends the event came: that is when its content was
  // known, which is what TTFT and ITL time.
  double time_s = 0;
  // kChunk: whether `choices` held a first choice; its text (completions' `text`, chat's
  // `delta.content`; null or absent: empty) and finish_reason (null or absent: empty).
  bool has_choice = false;
  std::string text;
  std::string finish_reason;
  std::optional<Usage> usage;  // a `usage` object (stream_options.include_usage)
  ServerError error;           // kError
};

struct StreamError {
  enum class Kind {
    kNotSse,       // a line that is no SSE field: an HTML page, a JSON body without `data:`
    kTooLarge,     // an event over SseLimits::max_event_bytes
    kInvalidUtf8,  // a line that is not UTF-8
    kBadJson,      // a `data:` payload that is not a JSON object
    kBadChunk,     // JSON of the wrong shape (choices not a list, text a number)
    kAfterDone,    // data after [DONE]
    kUnfinished,   // the stream ended inside a line
  };
  Kind kind = Kind::kNotSse;
  std::string message;  // what was wrong, with a short excerpt of the input
  size_t offset = 0;    // the byte of the stream where the offending line or event starts
};

// "not-sse", "too-large", ...: for tables and error counts.
const char* to_string(StreamError::Kind kind);

class SseParser {
 public:
  explicit SseParser(SseLimits limits = {});

  // Feeds the next bytes of the body, which arrived at `time_s`, and appends each event they
  // complete to `out`. Returns the first error (then and on every later call).
  std::optional<StreamError> feed(std::string_view bytes, double time_s,
                                  std::vector<SseEvent>& out);
  // The body ended at `time_s`: an event whose data lines were complete but whose blank line
  // never came is delivered, and so is a last `data: [DONE]` without its line end (servers that
  // close right after it); any other partial line is kUnfinished.
  std::optional<StreamError> finish(double time_s, std::vector<SseEvent>& out);

  bool done() const { return done_; }  // [DONE] was read
  size_t bytes_read() const { return offset_; }

 private:
  std::optional<StreamError> take_line(std::string_view line, double time_s,
                                       std::vector<SseEvent>& out);
  std::optional<StreamError> dispatch(std::vector<SseEvent>& out);
  std::optional<StreamError> fail(StreamError::Kind kind, std::string message, size_t offset);

  SseLimits limits_;
  std::string line_;       // the unfinished line
  size_t line_start_ = 0;  // its first byte's offset in the stream
  bool skip_lf_ = false;   // the last line ended with CR: a LF that follows belongs to it
  bool at_start_ = true;   // a byte-order mark may come first
  std::string data_;       // the event's data lines, joined by '\n'
  bool has_data_ = false;
  size_t event_bytes_ = 0;  // the event's bytes so far, for the limit
  size_t event_start_ = 0;
  double data_time_s_ = 0;  // when its last data line was complete
  size_t offset_ = 0;       // bytes fed so far
  bool done_ = false;
  std::optional<StreamError> error_;
};

// Reads one `data:` payload other than [DONE] into an event (kChunk or kError); nullopt and
// `why` when it is no JSON object or has the wrong shape (`bad_json`: whether it did not parse).
std::optional<SseEvent> read_chunk(std::string_view payload, std::string& why, bool& bad_json);

// JSON spells a character beyond U+FFFF as a UTF-16 surrogate pair of escapes (Python's
// json.dumps does so for every emoji); YAML, whose reader we use (config/yaml_io.h), has no such
// thing. Each pair is replaced by the character's UTF-8 bytes; anything else, a lone surrogate
// too, is left for the reader to judge. Escapes are found only inside strings, and `\\u` (an
// escaped backslash) is not one. Used on every JSON text the serve library reads.
std::string join_surrogate_pairs(std::string_view json);

}  // namespace sweepbench::serve
