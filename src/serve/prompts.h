// The prompts of a serve point's requests (docs/serving.md, "Prompts"): synthetic ones of
// controlled lengths, as text or as token ids, and the first turns of a ShareGPT file.
//
// Synthetic text: the client has no tokenizer, so the text is made of words that common BPE
// vocabularies (GPT-2's, Llama's, and the larger ones built like them) hold as one token each
// with their leading space: " the", " of", " time", ... (a fixed list of 200 of the commonest
// short English words). Space-separated, lowercase, no punctuation, one word is one token (the
// first, without a space before it, mostly too; Llama 2's tokenizer adds that space itself), so
// a prompt of n words is n tokens, plus the server's own additions (a BOS token; a chat
// template's tokens on the chat endpoint), which the usage's prompt_tokens shows. The list was
// chosen by word frequency, not run through each tokenizer here: a server's prompt_tokens against
// expected_prompt_tokens shows any drift. The words are drawn at random, so prompts differ from
// their first word on and prefix caching cannot answer one request from another's blocks
// (except an explicit shared prefix, below).
//
// Token ids: /v1/completions accepts "prompt": [ids] and vLLM honours it, so the lengths are
// exact; the ids are drawn uniformly from [low, high) the caller gives (1000 to vocab_size -
// 1000 keeps clear of special and rare tokens).
//
// Lengths: n, or with a range ratio r uniform over the whole numbers in [floor(n (1 - r)),
// ceil(n (1 + r))] for input and output alike, as vLLM's --random-range-ratio (at least 1).
//
// ShareGPT: a JSON list of {"conversations": [{"from": "human", "value": ...}, {"from": "gpt",
// ...}, ...], "id": ..., ...} (vLLM's ShareGPT_V3 file). Each conversation gives its first
// human turn as the prompt and the first gpt turn after it as the output's length; other
// fields are ignored. Without a tokenizer the lengths are estimated as ceil(UTF-8 bytes / 4):
// about 4 characters a token for English prose (OpenAI's rule of thumb), and it stays near the
// truth where words do not: code (punctuation is many tokens between few spaces) and Chinese or
// Japanese (no spaces; 3 bytes a character, about one token each), both common in ShareGPT.
// vLLM counts with the model's tokenizer, so its filtering and max_tokens differ a little.
//
// Reproducible: std::mt19937_64 turned into draws by arrivals.h's draw_uniform, never by the
// standard library's distributions: a seed gives the same prompts with any compiler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "serve/load_client.h"

namespace sweepbench::serve {

// One request's prompt: text or token ids (one of them empty), and its lengths.
struct Prompt {
  std::string text;
  std::vector<std::int64_t> token_ids;
  std::int64_t max_tokens = 0;
  // The length it was made to have: exact for token ids, the word count for synthetic text (the
  // server adds its BOS and template), the estimate above for a ShareGPT turn.
  std::int64_t expected_prompt_tokens = 0;
};

// The load client's requests for these prompts, in order.
std::vector<LoadRequest> load_requests_of(const std::vector<Prompt>& prompts);

// Token ids drawn uniformly from [low, high).
struct TokenIdRange {
  std::int64_t low = 0;
  std::int64_t high = 0;
};

struct SyntheticOptions {
  // Lengths uniform in [n (1 - r), n (1 + r)] for input and output (above); 0: exactly n.
  double range_ratio = 0;
  // Words (or ids) every prompt starts with, the same for all, before its own input_tokens: to
  // measure prefix caching on purpose (vLLM's --random-prefix-len). 0: none.
  std::int64_t shared_prefix_tokens = 0;
  // Token ids instead of text.
  std::optional<TokenIdRange> token_ids;
};

// `count` prompts of about input_tokens tokens (plus the shared prefix) each, max_tokens about
// output_tokens. Throws std::invalid_argument for input_tokens < 1, output_tokens < 0, a range
// ratio outside [0, 1), a negative prefix, or an empty id range.
std::vector<Prompt> synthetic_prompts(size_t count, std::int64_t input_tokens,
                                      std::int64_t output_tokens, std::uint64_t seed,
                                      const SyntheticOptions& options = {});

// The words synthetic text is made of (each one token with its leading space), for tests.
const std::vector<std::string>& synthetic_words();

struct ShareGptOptions {
  // max_tokens for every request instead of the gpt turn's estimated length; -1: the estimate.
  std::int64_t output_tokens = -1;
  // vLLM's filter of ShareGPT conversations, by estimated lengths: a prompt or output below
  // min_tokens, a prompt above max_prompt_tokens or a sum above max_total_tokens is left out
  // (the output's bounds do not apply when output_tokens is set). 0: no bound.
  std::int64_t min_tokens = 4;
  std::int64_t max_prompt_tokens = 1024;
  std::int64_t max_total_tokens = 2048;
};

// A ShareGPT file's usable conversations, read once: a serve point draws each level's prompts
// from it without reading the file again (ShareGPT itself is hundreds of MB). A conversation is
// usable when it has at least 2 turns, a human turn with a gpt turn after it, and lengths the
// filter keeps. The constructor throws sweepbench's Error naming the file when it does not exist
// or cannot be read, is not a JSON list, has an item that is not a JSON object (with the item's
// line), or holds no usable conversation.
class ShareGptFile {
 public:
  explicit ShareGptFile(const std::string& path, const ShareGptOptions& options = {});

  // `count` prompts: the usable conversations shuffled by `seed` and taken in that order,
  // cycling when there are fewer than count (a prompt then repeats, and prefix caching answers
  // its repeats).
  std::vector<Prompt> prompts(size_t count, std::uint64_t seed) const;

  size_t usable() const { return conversations_.size(); }

  // What a conversation gives: its first human turn and the lengths of that turn and the
  // first gpt turn after it.
  struct Conversation {
    std::string prompt;
    std::int64_t prompt_tokens = 0;
    std::int64_t output_tokens = 0;
  };

 private:
  ShareGptOptions options_;
  std::vector<Conversation> conversations_;
};

// ShareGptFile(path, options).prompts(count, seed).
std::vector<Prompt> sharegpt_prompts(const std::string& path, size_t count, std::uint64_t seed,
                                     const ShareGptOptions& options = {});

// The estimate of a text's tokens used for ShareGPT: ceil(UTF-8 bytes / 4), at least 1 for a
// text that is not empty.
std::int64_t estimated_tokens(const std::string& text);

}  // namespace sweepbench::serve
