// serve/sse.h on OpenAI-compatible streams as vLLM writes them, cut at every byte, and on broken
// ones: each a clear StreamError, with bounded memory.
#include "serve/sse.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sweepbench::serve {
namespace {

// A /v1/chat/completions stream as vLLM's OpenAI server sends it with
// stream_options.include_usage: a role-only first delta, content deltas (one with a two-byte, a
// three-byte and a four-byte UTF-8 character), the finish reason, a usage chunk with no choices.
// CRLF line ends, a keep-alive comment and an `event:` field, which servers may add.
const std::string kChat =
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\r\n\r\n"
    ": keep-alive\r\n\r\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Caf\xC3\xA9\"},"
    "\"finish_reason\":null}]}\r\n\r\n"
    "event: message\r\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" \xE6\x97\xA5 \xF0\x9F\x98\x80\"},"
    "\"finish_reason\":\"length\"}]}\r\n\r\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"total_tokens\":10,"
    "\"completion_tokens\":3}}\r\n\r\n"
    "data: [DONE]\r\n\r\n";

// A /v1/completions stream with LF ends; the last chunk carries both text and usage
// (continuous_usage_stats).
const std::string kCompletions =
    "data: {\"choices\":[{\"index\":0,\"text\":\"Hello\",\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"text\":\" world\",\"finish_reason\":\"stop\"}],"
    "\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\n"
    "data: [DONE]\n\n";

struct Parsed {
  std::vector<SseEvent> events;
  std::optional<StreamError> error;
};

// Feeds `stream` in pieces cut at `cuts` (increasing offsets), piece i arriving at time i.
Parsed parse_cut(const std::string& stream, const std::vector<size_t>& cuts,
                 SseLimits limits = {}) {
  SseParser parser(limits);
  Parsed p;
  size_t from = 0;
  double t = 0;
  for (size_t cut : cuts) {
    p.error = parser.feed(std::string_view(stream).substr(from, cut - from), t, p.events);
    if (p.error) return p;
    from = cut;
    t += 1;
  }
  p.error = parser.feed(std::string_view(stream).substr(from), t, p.events);
  if (!p.error) p.error = parser.finish(t + 1, p.events);
  return p;
}

Parsed parse_whole(const std::string& stream, SseLimits limits = {}) {
  return parse_cut(stream, {}, limits);
}

// Events without their times, for comparing parses of differently cut streams.
std::string shape(const std::vector<SseEvent>& events) {
  std::string out;
  for (const SseEvent& e : events) {
    out += std::to_string(static_cast<int>(e.kind)) + "|" + (e.has_choice ? "c" : "-") + "|" +
           e.text + "|" + e.finish_reason + "|";
    if (e.usage) {
      out +=
          std::to_string(e.usage->prompt_tokens) + "/" + std::to_string(e.usage->completion_tokens);
    }
    out += "|" + e.error.message + "|" + e.error.type + "|" + e.error.code + "\n";
  }
  return out;
}

TEST(Sse, ReadsAChatStream) {
  Parsed p = parse_whole(kChat);
  ASSERT_FALSE(p.error) << p.error->message;
  ASSERT_EQ(p.events.size(), 5u);
  EXPECT_EQ(p.events[0].kind, SseEvent::Kind::kChunk);
  EXPECT_TRUE(p.events[0].has_choice);
  EXPECT_EQ(p.events[0].text, "");
  EXPECT_EQ(p.events[1].text, "Caf\xC3\xA9");
  EXPECT_EQ(p.events[1].finish_reason, "");
  EXPECT_EQ(p.events[2].text, " \xE6\x97\xA5 \xF0\x9F\x98\x80");
  EXPECT_EQ(p.events[2].finish_reason, "length");
  EXPECT_FALSE(p.events[2].usage);
  EXPECT_FALSE(p.events[3].has_choice);
  ASSERT_TRUE(p.events[3].usage);
  EXPECT_EQ(p.events[3].usage->prompt_tokens, 7);
  EXPECT_EQ(p.events[3].usage->completion_tokens, 3);
  EXPECT_EQ(p.events[4].kind, SseEvent::Kind::kDone);
}

TEST(Sse, ReadsACompletionsStream) {
  Parsed p = parse_whole(kCompletions);
  ASSERT_FALSE(p.error) << p.error->message;
  ASSERT_EQ(p.events.size(), 3u);
  EXPECT_EQ(p.events[0].text, "Hello");
  EXPECT_EQ(p.events[1].text, " world");
  EXPECT_EQ(p.events[1].finish_reason, "stop");
  ASSERT_TRUE(p.events[1].usage);
  EXPECT_EQ(p.events[1].usage->completion_tokens, 2);
  EXPECT_EQ(p.events[2].kind, SseEvent::Kind::kDone);
}

TEST(Sse, GivesTheSameEventsHoweverTheBytesAreCut) {
  for (const std::string* stream : {&kChat, &kCompletions}) {
    const std::string whole = shape(parse_whole(*stream).events);
    // Every cut into two pieces: inside a CRLF, a `data:` prefix, a UTF-8 character.
    for (size_t cut = 1; cut < stream->size(); ++cut) {
      Parsed p = parse_cut(*stream, {cut});
      ASSERT_FALSE(p.error) << "cut at " << cut << ": " << p.error->message;
      ASSERT_EQ(shape(p.events), whole) << "cut at " << cut;
    }
    // One byte at a time.
    std::vector<size_t> every;
    for (size_t i = 1; i < stream->size(); ++i) every.push_back(i);
    Parsed p = parse_cut(*stream, every);
    ASSERT_FALSE(p.error) << p.error->message;
    EXPECT_EQ(shape(p.events), whole);
  }
}

TEST(Sse, TimesAnEventWhenItsDataLineWasComplete) {
  // One byte at a time, byte i arriving at time i: each event's time is the offset of the line
  // end of its data line, not of the blank line after it.
  std::vector<size_t> every;
  for (size_t i = 1; i < kCompletions.size(); ++i) every.push_back(i);
  Parsed p = parse_cut(kCompletions, every);
  ASSERT_FALSE(p.error);
  ASSERT_EQ(p.events.size(), 3u);
  size_t search = 0;
  for (const SseEvent& e : p.events) {
    size_t line_end = kCompletions.find('\n', kCompletions.find("data:", search));
    EXPECT_EQ(e.time_s, static_cast<double>(line_end));
    search = line_end + 2;
  }
  // Cut between a data line's end and the blank line: the event keeps its line's time.
  size_t first_end = kCompletions.find('\n');
  Parsed q = parse_cut(kCompletions, {first_end + 1});
  ASSERT_FALSE(q.error);
  EXPECT_EQ(q.events[0].time_s, 0);
  EXPECT_EQ(q.events[1].time_s, 1);
}

TEST(Sse, JoinsDataLinesAndReadsJsonEscapes) {
  // An event's data lines join with a newline (JSON whitespace); \u escapes, a surrogate pair
  // among them, become UTF-8.
  Parsed p = parse_whole(
      "data: {\"choices\":[{\"text\":\"\\u00e9\\ud83d\\ude00\\n\",\n"
      "data: \"finish_reason\":null}]}\n\n");
  ASSERT_FALSE(p.error) << p.error->message;
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].text, "\xC3\xA9\xF0\x9F\x98\x80\n");
  // An escaped backslash before `ud83d` is text, not an escape; an escaped quote does not end
  // the string.
  Parsed q = parse_whole("data: {\"choices\":[{\"text\":\"\\\\ud83d \\\" \\ud83d\\ude00\"}]}\n\n");
  ASSERT_FALSE(q.error) << q.error->message;
  ASSERT_EQ(q.events.size(), 1u);
  EXPECT_EQ(q.events[0].text, "\\ud83d \" \xF0\x9F\x98\x80");
}

TEST(Sse, ReadsServerErrorObjects) {
  Parsed openai = parse_whole(
      "data: {\"error\":{\"message\":\"max_tokens is too large\",\"type\":"
      "\"BadRequestError\",\"param\":null,\"code\":400}}\n\n");
  ASSERT_FALSE(openai.error);
  ASSERT_EQ(openai.events.size(), 1u);
  EXPECT_EQ(openai.events[0].kind, SseEvent::Kind::kError);
  EXPECT_EQ(openai.events[0].error.message, "max_tokens is too large");
  EXPECT_EQ(openai.events[0].error.type, "BadRequestError");
  EXPECT_EQ(openai.events[0].error.code, "400");
  Parsed vllm = parse_whole(
      "data: {\"object\":\"error\",\"message\":\"engine dead\",\"type\":\"InternalServerError\","
      "\"code\":\"engine_dead\"}\n\n");
  ASSERT_FALSE(vllm.error);
  ASSERT_EQ(vllm.events.size(), 1u);
  EXPECT_EQ(vllm.events[0].kind, SseEvent::Kind::kError);
  EXPECT_EQ(vllm.events[0].error.message, "engine dead");
  EXPECT_EQ(vllm.events[0].error.code, "engine_dead");
}

TEST(Sse, AcceptsADoneWithoutItsLineEnd) {
  Parsed p = parse_whole("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]");
  ASSERT_FALSE(p.error) << p.error->message;
  ASSERT_EQ(p.events.size(), 2u);
  EXPECT_EQ(p.events[1].kind, SseEvent::Kind::kDone);
  EXPECT_EQ(p.events[1].time_s, 1);  // the finish call's time: when the line was known whole
}

struct BadCase {
  const char* name;
  std::string stream;
  StreamError::Kind kind;
  const char* says;  // a part of the message
  size_t offset;
};

TEST(Sse, NamesWhatIsWrongWithABrokenStream) {
  const std::string ok = "data: {\"choices\":[{\"text\":\"a\"}]}\n\n";  // 35 bytes
  const std::vector<BadCase> cases = {
      {"an HTML error page", ok + "<html><body>502 Bad Gateway</body></html>\n",
       StreamError::Kind::kNotSse, "<html><body>502 Bad Gateway", ok.size()},
      {"a JSON body without data:", "{\"error\": \"overloaded\"}\n\n", StreamError::Kind::kNotSse,
       "no SSE field", 0},
      {"JSON cut short", ok + "data: {\"choices\":[{\"text\":\"b\"\n\n",
       StreamError::Kind::kBadJson, "not a JSON object", ok.size()},
      {"brackets that do not match", ok + "data: {\"choices\":[{\"text\":\"b\"}}\n\n",
       StreamError::Kind::kBadJson, "not JSON (", ok.size()},
      {"a lone surrogate", "data: {\"choices\":[{\"text\":\"\\ud83d\"}]}\n\n",
       StreamError::Kind::kBadJson, "not JSON (", 0},
      {"a payload that is no object", "data: hello\n\n", StreamError::Kind::kBadJson, "'hello'", 0},
      {"choices not a list", "data: {\"choices\":{\"text\":\"a\"}}\n\n",
       StreamError::Kind::kBadChunk, "choices is a mapping", 0},
      {"text a number", "data: {\"choices\":[{\"text\":3}]}\n\n", StreamError::Kind::kBadChunk,
       "choices[0].text is an integer", 0},
      {"a negative token count", "data: {\"usage\":{\"completion_tokens\":-2}}\n\n",
       StreamError::Kind::kBadChunk, "usage.completion_tokens", 0},
      {"invalid UTF-8", ok + "data: {\"choices\":[{\"text\":\"\xC3(\"}]}\n\n",
       StreamError::Kind::kInvalidUtf8, "\\xC3(", ok.size()},
      {"data after [DONE]", "data: [DONE]\n\n" + ok, StreamError::Kind::kAfterDone, "[DONE]", 14},
      {"a stream cut inside a line", ok + "data: {\"choices\":[{\"te",
       StreamError::Kind::kUnfinished, "ended inside a line", ok.size()},
  };
  for (const BadCase& c : cases) {
    // Whole, and cut at every byte: the same error at the same offset.
    Parsed whole = parse_whole(c.stream);
    ASSERT_TRUE(whole.error) << c.name;
    EXPECT_EQ(whole.error->kind, c.kind) << c.name << ": " << whole.error->message;
    EXPECT_NE(whole.error->message.find(c.says), std::string::npos)
        << c.name << ": " << whole.error->message;
    EXPECT_EQ(whole.error->offset, c.offset) << c.name;
    for (size_t cut = 1; cut < c.stream.size(); ++cut) {
      Parsed p = parse_cut(c.stream, {cut});
      ASSERT_TRUE(p.error) << c.name << ", cut at " << cut;
      EXPECT_EQ(p.error->kind, c.kind) << c.name << ", cut at " << cut;
      EXPECT_EQ(p.error->offset, c.offset) << c.name << ", cut at " << cut;
    }
  }
}

TEST(Sse, StopsAnEventOverTheLimitWithoutHoldingIt) {
  // 64 MiB without a line end, 64 KiB at a time, against a 1 MiB limit: the error comes once
  // the line passes the limit, the parser then holds nothing and stays failed.
  SseParser parser;
  std::vector<SseEvent> events;
  const std::string piece(64 * 1024, 'x');
  std::optional<StreamError> error = parser.feed("data: {\"choices\":[{\"text\":\"", 0, events);
  ASSERT_FALSE(error);
  size_t fed = 0;
  for (int i = 0; i < 1024 && !error; ++i) {
    error = parser.feed(piece, 1, events);
    fed += piece.size();
  }
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind, StreamError::Kind::kTooLarge);
  EXPECT_NE(error->message.find("longer than 1048576 bytes"), std::string::npos) << error->message;
  EXPECT_LE(fed, (size_t{1} << 20) + piece.size());
  EXPECT_EQ(error->offset, 0u);
  std::optional<StreamError> again = parser.feed(kCompletions, 2, events);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->kind, StreamError::Kind::kTooLarge);
  EXPECT_TRUE(events.empty());
}

TEST(Sse, CountsAnEventsDataLinesTogetherAgainstTheLimit) {
  // Many short data lines that make one event: each under the limit, together over it.
  std::string stream;
  for (int i = 0; i < 100; ++i) stream += "data: " + std::string(50, ' ') + "\n";
  SseLimits small{2000};
  Parsed p = parse_whole(stream + "\n", small);
  ASSERT_TRUE(p.error);
  EXPECT_EQ(p.error->kind, StreamError::Kind::kTooLarge);
  // Under the limit, the same event is read (and is no JSON: spaces alone).
  Parsed q = parse_whole(stream + "\n", SseLimits{100000});
  ASSERT_TRUE(q.error);
  EXPECT_EQ(q.error->kind, StreamError::Kind::kBadJson);
}

TEST(Sse, SkipsAByteOrderMarkAndEmptyEvents) {
  Parsed p = parse_whole("\xEF\xBB\xBF: hello\n\nevent: ping\n\n" + kCompletions);
  ASSERT_FALSE(p.error) << p.error->message;
  EXPECT_EQ(p.events.size(), 3u);
}

}  // namespace
}  // namespace sweepbench::serve
