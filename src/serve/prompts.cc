// serve/prompts.h: synthetic prompts, and the ShareGPT reader (a file read in blocks, its list's
// items parsed one at a time).
#include "serve/prompts.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <iterator>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include "config/value.h"
#include "config/yaml_io.h"
#include "os/fs.h"
#include "serve/arrivals.h"
#include "serve/sse.h"
#include "text/error.h"

namespace sweepbench::serve {
namespace {

// 200 of the commonest English words, each one token with its leading space in GPT-2's and
// Llama's vocabularies (and in those built the same way with more tokens, as Llama 3's): short,
// lowercase, no apostrophes. Changing the list changes every seed's prompts.
const char* const kWords[] = {
    "the",    "of",    "and",   "to",     "in",     "is",     "was",     "that",   "for",
    "it",     "with",  "as",    "on",     "be",     "at",     "by",      "this",   "had",
    "not",    "are",   "but",   "from",   "or",     "have",   "an",      "they",   "which",
    "one",    "you",   "were",  "her",    "all",    "she",    "there",   "would",  "their",
    "we",     "him",   "been",  "has",    "when",   "who",    "will",    "more",   "no",
    "if",     "out",   "so",    "said",   "what",   "up",     "its",     "about",  "into",
    "than",   "them",  "can",   "only",   "other",  "new",    "some",    "could",  "time",
    "these",  "two",   "may",   "then",   "do",     "first",  "any",     "my",     "now",
    "such",   "like",  "our",   "over",   "man",    "me",     "even",    "most",   "made",
    "after",  "also",  "did",   "many",   "before", "must",   "back",    "years",  "where",
    "much",   "your",  "way",   "well",   "down",   "should", "each",    "just",   "those",
    "people", "how",   "too",   "little", "state",  "good",   "very",    "make",   "world",
    "still",  "own",   "see",   "men",    "work",   "long",   "get",     "here",   "both",
    "life",   "being", "under", "never",  "day",    "same",   "know",    "while",  "last",
    "might",  "us",    "great", "old",    "year",   "off",    "come",    "since",  "go",
    "came",   "right", "used",  "take",   "three",  "water",  "small",   "found",  "house",
    "part",   "place", "home",  "every",  "went",   "number", "night",   "point",  "hand",
    "high",   "again", "city",  "upon",   "school", "thing",  "away",    "things", "family",
    "head",   "look",  "does",  "group",  "need",   "light",  "side",    "power",  "real",
    "money",  "name",  "line",  "left",   "end",    "game",   "best",    "book",   "show",
    "week",   "later", "often", "data",   "open",   "case",   "between", "women",  "system",
    "far",    "next",  "body",  "set",    "story",  "form",   "word",    "area",   "child",
    "room",   "order",
};

// Whole numbers uniform in [lo, hi].
std::int64_t draw_between(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  auto span = static_cast<double>(hi - lo + 1);
  auto k = static_cast<std::int64_t>(std::floor(draw_uniform(rng) * span));
  return lo + std::min(k, hi - lo);  // a uniform of 1 - 2^-54 times a large span rounds up
}

// A length n, or uniform in [floor(n (1 - r)), ceil(n (1 + r))], at least `at_least`.
std::int64_t draw_length(std::mt19937_64& rng, std::int64_t n, double r, std::int64_t at_least) {
  if (r == 0) return std::max(n, at_least);
  auto lo = static_cast<std::int64_t>(std::floor(static_cast<double>(n) * (1 - r)));
  auto hi = static_cast<std::int64_t>(std::ceil(static_cast<double>(n) * (1 + r)));
  return draw_between(rng, std::max(lo, at_least), std::max(hi, at_least));
}

// Fills `prompt` with `tokens` more words or ids.
void append_tokens(std::mt19937_64& rng, std::int64_t tokens,
                   const std::optional<TokenIdRange>& ids, Prompt& prompt) {
  const std::vector<std::string>& words = synthetic_words();
  for (std::int64_t i = 0; i < tokens; ++i) {
    if (ids) {
      prompt.token_ids.push_back(draw_between(rng, ids->low, ids->high - 1));
    } else {
      auto w =
          static_cast<size_t>(draw_between(rng, 0, static_cast<std::int64_t>(words.size()) - 1));
      if (!prompt.text.empty()) prompt.text += ' ';
      prompt.text += words[w];
    }
  }
}

using Conversation = ShareGptFile::Conversation;

const Value* string_field(const Value& map, const char* key) {
  const Value* v = map.is_map() ? map.find(key) : nullptr;
  return v != nullptr && v->is_string() ? v : nullptr;
}

bool is_human(const std::string& from) { return from == "human" || from == "user"; }
bool is_gpt(const std::string& from) {
  return from == "gpt" || from == "assistant" || from == "chatgpt";
}

// The conversation's first human turn and the first gpt turn after it; nullopt when it has none,
// or fewer than 2 turns.
std::optional<Conversation> conversation_of(const Value& item) {
  const Value* turns = item.is_map() ? item.find("conversations") : nullptr;
  if (turns == nullptr || !turns->is_list() || turns->items().size() < 2) return std::nullopt;
  const std::string* human = nullptr;
  for (const Value& turn : turns->items()) {
    const Value* from = string_field(turn, "from");
    const Value* value = string_field(turn, "value");
    if (from == nullptr || value == nullptr) continue;
    if (human == nullptr) {
      if (is_human(from->as_string())) human = &value->as_string();
    } else if (is_gpt(from->as_string())) {
      return Conversation{*human, estimated_tokens(*human), estimated_tokens(value->as_string())};
    }
  }
  return std::nullopt;
}

bool kept_by_filter(const Conversation& c, const ShareGptOptions& o) {
  bool fixed_output = o.output_tokens >= 0;
  if (o.min_tokens > 0 &&
      (c.prompt_tokens < o.min_tokens || (!fixed_output && c.output_tokens < o.min_tokens)))
    return false;
  if (o.max_prompt_tokens > 0 && c.prompt_tokens > o.max_prompt_tokens) return false;
  std::int64_t output = fixed_output ? o.output_tokens : c.output_tokens;
  return o.max_total_tokens <= 0 || c.prompt_tokens + output <= o.max_total_tokens;
}

// A lone surrogate escape (\uD800 to \uDFFF without its pair; scraped text has them) becomes
// U+FFFD, the replacement character, as Python's errors="replace" would write it: the reader
// takes no lone surrogate, and one broken emoji should not lose a conversation. Runs after
// join_surrogate_pairs, so every surrogate escape left is a lone one.
std::string replace_lone_surrogates(std::string s) {
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {
      in_string = !in_string;
    } else if (in_string && c == '\\' && i + 1 < s.size()) {
      if (s[i + 1] == 'u' && i + 5 < s.size() && (s[i + 2] == 'd' || s[i + 2] == 'D') &&
          std::strchr("89abAB", s[i + 3]) != nullptr) {
        s.replace(i + 2, 4, "FFFD");
      }
      ++i;  // the escaped character is never a quote or the start of another escape
    }
  }
  return s;
}

// The items of a JSON list read as a stream of bytes: each item's text and the line it starts
// on, found by tracking strings and nesting, so that only one item is held as a tree at a time.
class ListSplitter {
 public:
  ListSplitter(std::string path,
               std::function<void(const std::string& item, int line, size_t index)> sink)
      : path_(std::move(path)), sink_(std::move(sink)) {}

  void feed(const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i) step(data[i]);
  }

  void finish() {
    if (state_ != State::kAfterList) {
      fail(line_, state_ == State::kBeforeList ? "is empty, not a JSON list"
                                               : "ends before its JSON list does");
    }
  }

 private:
  enum class State { kBeforeList, kExpectItem, kInItem, kAfterItem, kAfterList };

  [[noreturn]] void fail(int line, const std::string& problem) const {
    throw Error::input(Mark::in(path_, line), "dataset", problem,
                       "a ShareGPT file is a JSON list of {\"conversations\": [{\"from\": "
                       "\"human\", \"value\": ...}, ...]}");
  }

  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

  void step(char c) {
    ++offset_;
    if (state_ == State::kInItem) {
      item_ += c;
      if (c == '\n') ++line_;
      if (in_string_) {
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
      } else if (c == '"') {
        in_string_ = true;
      } else if (c == '{' || c == '[') {
        ++depth_;
      } else if ((c == '}' || c == ']') && --depth_ == 0) {
        sink_(item_, item_line_, items_++);
        item_.clear();
        state_ = State::kAfterItem;
      }
      return;
    }
    if (c == '\n') ++line_;
    // A UTF-8 byte order mark before the list (Windows editors write one).
    if (state_ == State::kBeforeList && offset_ <= 3 && static_cast<unsigned char>(c) >= 0x80 &&
        bom_ok(c)) {
      return;
    }
    if (is_space(c)) return;
    switch (state_) {
      case State::kBeforeList:
        if (c != '[')
          fail(line_, "is not a JSON list (it starts with '" + std::string(1, c) + "')");
        state_ = State::kExpectItem;
        first_ = true;
        return;
      case State::kExpectItem:
        if (c == ']' && first_) {
          state_ = State::kAfterList;
          return;
        }
        if (c != '{') {
          fail(line_, "item " + std::to_string(items_) + " is not a JSON object");
        }
        first_ = false;
        state_ = State::kInItem;
        item_line_ = line_;
        item_ = "{";
        depth_ = 1;
        return;
      case State::kAfterItem:
        if (c == ',') {
          state_ = State::kExpectItem;
        } else if (c == ']') {
          state_ = State::kAfterList;
        } else {
          fail(line_,
               "is not JSON: '" + std::string(1, c) + "' after item " + std::to_string(items_ - 1));
        }
        return;
      case State::kAfterList:
        fail(line_, "has more after its JSON list");
      case State::kInItem:
        return;
    }
  }

  bool bom_ok(char c) const {
    static const unsigned char kBom[] = {0xEF, 0xBB, 0xBF};
    return static_cast<unsigned char>(c) == kBom[offset_ - 1];
  }

  std::string path_;
  std::function<void(const std::string&, int, size_t)> sink_;
  State state_ = State::kBeforeList;
  bool first_ = true;
  bool in_string_ = false, escaped_ = false;
  int depth_ = 0;
  int line_ = 1, item_line_ = 1;
  size_t offset_ = 0, items_ = 0;
  std::string item_;
};

}  // namespace

const std::vector<std::string>& synthetic_words() {
  static const std::vector<std::string> words(std::begin(kWords), std::end(kWords));
  return words;
}

std::vector<LoadRequest> load_requests_of(const std::vector<Prompt>& prompts) {
  std::vector<LoadRequest> requests;
  requests.reserve(prompts.size());
  for (const Prompt& p : prompts) requests.push_back({p.text, p.max_tokens, p.token_ids});
  return requests;
}

std::int64_t estimated_tokens(const std::string& text) {
  return static_cast<std::int64_t>((text.size() + 3) / 4);
}

std::vector<Prompt> synthetic_prompts(size_t count, std::int64_t input_tokens,
                                      std::int64_t output_tokens, std::uint64_t seed,
                                      const SyntheticOptions& options) {
  if (input_tokens < 1) throw std::invalid_argument("prompts: input_tokens is below 1");
  if (output_tokens < 0) throw std::invalid_argument("prompts: output_tokens is negative");
  if (!(options.range_ratio >= 0 && options.range_ratio < 1)) {
    throw std::invalid_argument("prompts: the range ratio is not in [0, 1)");
  }
  if (options.shared_prefix_tokens < 0) {
    throw std::invalid_argument("prompts: the shared prefix is negative");
  }
  if (options.token_ids &&
      !(options.token_ids->low >= 0 && options.token_ids->low < options.token_ids->high)) {
    throw std::invalid_argument("prompts: the token id range [" +
                                std::to_string(options.token_ids->low) + ", " +
                                std::to_string(options.token_ids->high) + ") is empty or negative");
  }
  std::mt19937_64 rng(seed);
  Prompt prefix;
  append_tokens(rng, options.shared_prefix_tokens, options.token_ids, prefix);

  std::vector<Prompt> prompts;
  prompts.reserve(count);
  // Prompts are redrawn when they repeat one already made, which only a length of a word or two
  // can do (200^3 = 8 million three-word prompts); where the lengths leave fewer prompts than
  // `count`, the repeats stay.
  std::unordered_set<std::string> seen_text;
  std::set<std::vector<std::int64_t>> seen_ids;
  constexpr int kRedraws = 16;
  for (size_t i = 0; i < count; ++i) {
    std::int64_t input = draw_length(rng, input_tokens, options.range_ratio, 1);
    std::int64_t output =
        draw_length(rng, output_tokens, options.range_ratio, output_tokens > 0 ? 1 : 0);
    Prompt p;
    for (int attempt = 0; attempt <= kRedraws; ++attempt) {
      p = prefix;
      append_tokens(rng, input, options.token_ids, p);
      bool fresh =
          options.token_ids ? seen_ids.insert(p.token_ids).second : seen_text.insert(p.text).second;
      if (fresh) break;
    }
    p.max_tokens = output;
    p.expected_prompt_tokens = options.shared_prefix_tokens + input;
    prompts.push_back(std::move(p));
  }
  return prompts;
}

ShareGptFile::ShareGptFile(const std::string& path, const ShareGptOptions& options)
    : options_(options) {
  Mark file = Mark::in(path);
  int fd = open_regular_file(path);
  if (fd < 0) {
    throw Error::input(file, "dataset", "does not exist",
                       "give the path of a ShareGPT JSON file (a list of conversations)");
  }
  size_t items = 0;
  ListSplitter splitter(path, [&](const std::string& text, int line, size_t index) {
    ++items;
    Value item;
    try {
      item = parse_own_yaml(replace_lone_surrogates(join_surrogate_pairs(text)), path);
    } catch (const Error& e) {
      int at = e.mark().line > 0 ? line + e.mark().line - 1 : line;
      throw Error::input(Mark::in(path, at), "dataset",
                         "item " + std::to_string(index) + " is not JSON: " + e.message());
    }
    std::optional<Conversation> c = conversation_of(item);
    if (c && kept_by_filter(*c, options)) conversations_.push_back(std::move(*c));
  });
  try {
    std::vector<char> block(size_t{1} << 20);
    while (true) {
      ssize_t n = ::read(fd, block.data(), block.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw io_error(path, "cannot be read");
      if (n == 0) break;
      splitter.feed(block.data(), static_cast<size_t>(n));
    }
    splitter.finish();
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (conversations_.empty()) {
    throw Error::input(file, "dataset",
                       "has no usable conversation among its " + std::to_string(items) +
                           " items (one with a human turn and a gpt turn after it, within the "
                           "length filter)",
                       "check the file's format, or lower the filter's bounds");
  }
}

std::vector<Prompt> ShareGptFile::prompts(size_t count, std::uint64_t seed) const {
  // Fisher and Yates with our own draws, so that a seed shuffles the same everywhere.
  std::vector<size_t> order(conversations_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng(seed);
  for (size_t i = order.size() - 1; i > 0; --i) {
    auto j = static_cast<size_t>(draw_between(rng, 0, static_cast<std::int64_t>(i)));
    std::swap(order[i], order[j]);
  }
  std::vector<Prompt> prompts;
  prompts.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const Conversation& c = conversations_[order[i % order.size()]];
    Prompt p;
    p.text = c.prompt;
    p.max_tokens = options_.output_tokens >= 0 ? options_.output_tokens : c.output_tokens;
    p.expected_prompt_tokens = c.prompt_tokens;
    prompts.push_back(std::move(p));
  }
  return prompts;
}

std::vector<Prompt> sharegpt_prompts(const std::string& path, size_t count, std::uint64_t seed,
                                     const ShareGptOptions& options) {
  return ShareGptFile(path, options).prompts(count, seed);
}

}  // namespace sweepbench::serve
