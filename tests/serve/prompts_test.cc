// serve/prompts.h: synthetic prompts' lengths, words, seeds and distinctness, token-id prompts
// and their request body, and the ShareGPT reader on small files written here, good and bad.
#include "serve/prompts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "config/value.h"
#include "config/yaml_io.h"
#include "serve/load_client.h"
#include "support/expect_error.h"
#include "support/temp_dir.h"
#include "text/error.h"

namespace sweepbench::serve {
namespace {

using sweepbench::testing::error_of;
using sweepbench::testing::TempDir;

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

TEST(SyntheticWords, AreTwoHundredDistinctLowercaseWords) {
  const std::vector<std::string>& words = synthetic_words();
  EXPECT_EQ(words.size(), 200u);
  EXPECT_EQ(std::set<std::string>(words.begin(), words.end()).size(), words.size());
  for (const std::string& w : words) {
    EXPECT_FALSE(w.empty());
    EXPECT_LE(w.size(), 7u) << w;
    for (char c : w) EXPECT_TRUE(c >= 'a' && c <= 'z') << w;
  }
}

TEST(SyntheticPrompts, HaveTheLengthsAskedOfWordsFromTheList) {
  std::vector<Prompt> prompts = synthetic_prompts(50, 100, 20, 7);
  ASSERT_EQ(prompts.size(), 50u);
  std::set<std::string> known(synthetic_words().begin(), synthetic_words().end());
  for (const Prompt& p : prompts) {
    std::vector<std::string> words = words_of(p.text);
    EXPECT_EQ(words.size(), 100u);
    for (const std::string& w : words) EXPECT_EQ(known.count(w), 1u) << w;
    // One space between words, none around: the count of tokens is the count of words.
    EXPECT_EQ(std::count(p.text.begin(), p.text.end(), ' '), 99);
    EXPECT_EQ(p.max_tokens, 20);
    EXPECT_EQ(p.expected_prompt_tokens, 100);
    EXPECT_TRUE(p.token_ids.empty());
  }
}

TEST(SyntheticPrompts, RangesStayWithinTheRatioAndSpreadOverIt) {
  SyntheticOptions options;
  options.range_ratio = 0.5;
  std::vector<Prompt> prompts = synthetic_prompts(2000, 100, 11, 3, options);
  std::int64_t min_in = 1000, max_in = 0, min_out = 1000, max_out = 0;
  double sum_in = 0;
  for (const Prompt& p : prompts) {
    auto n = static_cast<std::int64_t>(words_of(p.text).size());
    EXPECT_EQ(n, p.expected_prompt_tokens);
    min_in = std::min(min_in, n);
    max_in = std::max(max_in, n);
    min_out = std::min(min_out, p.max_tokens);
    max_out = std::max(max_out, p.max_tokens);
    sum_in += static_cast<double>(n);
  }
  // [floor(50), ceil(150)] and [floor(5.5), ceil(16.5)] = [5, 17], each end reached in 2000.
  EXPECT_EQ(min_in, 50);
  EXPECT_EQ(max_in, 150);
  EXPECT_EQ(min_out, 5);
  EXPECT_EQ(max_out, 17);
  // The mean of 101 equally likely lengths is 100; its standard error over 2000 is 0.65.
  EXPECT_NEAR(sum_in / 2000, 100, 4 * 0.65);

  // Short lengths never reach 0: 1 +- 90% is [0, 2], floored at 1.
  options.range_ratio = 0.9;
  for (const Prompt& p : synthetic_prompts(200, 1, 1, 3, options)) {
    EXPECT_GE(p.expected_prompt_tokens, 1);
    EXPECT_LE(p.expected_prompt_tokens, 2);
    EXPECT_GE(p.max_tokens, 1);
  }
  // An output of 0 stays 0 (the no-output kind's requests).
  for (const Prompt& p : synthetic_prompts(20, 5, 0, 3, options)) EXPECT_EQ(p.max_tokens, 0);
}

TEST(SyntheticPrompts, ASeedGivesTheSamePromptsAnotherSeedOthers) {
  SyntheticOptions options;
  options.range_ratio = 0.2;
  std::vector<Prompt> a = synthetic_prompts(20, 30, 10, 42, options);
  std::vector<Prompt> b = synthetic_prompts(20, 30, 10, 42, options);
  std::vector<Prompt> c = synthetic_prompts(20, 30, 10, 43, options);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].text, b[i].text);
    EXPECT_EQ(a[i].max_tokens, b[i].max_tokens);
    EXPECT_NE(a[i].text, c[i].text);
  }
  // Seed 42's first prompts, so that a change of the word list or of the draws shows here (the
  // draws are our own, so any compiler and library gives these).
  EXPECT_EQ(synthetic_prompts(1, 5, 1, 42)[0].text, "point us night one week");
  SyntheticOptions ids;
  ids.token_ids = TokenIdRange{1000, 31000};
  EXPECT_EQ(synthetic_prompts(1, 4, 1, 42, ids)[0].token_ids,
            (std::vector<std::int64_t>{23654, 20170, 23564, 5088}));
}

TEST(SyntheticPrompts, AreDistinctEvenWhenShort) {
  for (std::int64_t words : {2, 4, 64}) {
    std::vector<Prompt> prompts = synthetic_prompts(1000, words, 1, 5);
    std::set<std::string> texts;
    for (const Prompt& p : prompts) texts.insert(p.text);
    EXPECT_EQ(texts.size(), 1000u) << words << " words";
  }
  // One word has only 200 prompts: 300 requests repeat some, and the redraws end.
  std::set<std::string> texts;
  for (const Prompt& p : synthetic_prompts(300, 1, 1, 5)) texts.insert(p.text);
  EXPECT_EQ(texts.size(), 200u);
}

TEST(SyntheticPrompts, ASharedPrefixStartsEveryPromptAndTheirOwnWordsFollow) {
  SyntheticOptions options;
  options.shared_prefix_tokens = 16;
  std::vector<Prompt> prompts = synthetic_prompts(30, 8, 4, 9, options);
  std::vector<std::string> first = words_of(prompts[0].text);
  std::vector<std::string> prefix(first.begin(), first.begin() + 16);
  std::set<std::string> rests;
  for (const Prompt& p : prompts) {
    std::vector<std::string> words = words_of(p.text);
    ASSERT_EQ(words.size(), 24u);
    EXPECT_EQ(std::vector<std::string>(words.begin(), words.begin() + 16), prefix);
    EXPECT_EQ(p.expected_prompt_tokens, 24);
    std::string rest;
    for (size_t i = 16; i < words.size(); ++i) rest += words[i] + " ";
    rests.insert(rest);
  }
  EXPECT_EQ(rests.size(), 30u);
}

TEST(SyntheticPrompts, TokenIdsAreExactInTheirRangeAndDistinct) {
  SyntheticOptions options;
  options.token_ids = TokenIdRange{1000, 31000};
  options.range_ratio = 0.25;
  std::vector<Prompt> prompts = synthetic_prompts(500, 64, 8, 11, options);
  std::set<std::vector<std::int64_t>> distinct;
  std::int64_t lowest = 1 << 30, highest = 0;
  for (const Prompt& p : prompts) {
    EXPECT_TRUE(p.text.empty());
    EXPECT_EQ(static_cast<std::int64_t>(p.token_ids.size()), p.expected_prompt_tokens);
    EXPECT_GE(p.expected_prompt_tokens, 48);
    EXPECT_LE(p.expected_prompt_tokens, 80);
    for (std::int64_t id : p.token_ids) {
      lowest = std::min(lowest, id);
      highest = std::max(highest, id);
    }
    distinct.insert(p.token_ids);
  }
  EXPECT_EQ(distinct.size(), 500u);
  EXPECT_GE(lowest, 1000);
  EXPECT_LT(highest, 31000);
  // 32,000 draws of 30,000 ids: both ends are within 10 of their bound (each miss is e^-10).
  EXPECT_LT(lowest, 1010);
  EXPECT_GT(highest, 30990);

  // A range of one id: every token is that id.
  options.token_ids = TokenIdRange{7, 8};
  options.range_ratio = 0;
  std::vector<Prompt> sevens = synthetic_prompts(3, 4, 1, 1, options);
  EXPECT_EQ(sevens[2].token_ids, (std::vector<std::int64_t>{7, 7, 7, 7}));
}

TEST(SyntheticPrompts, RefuseNonsense) {
  EXPECT_THROW(synthetic_prompts(1, 0, 1, 1), std::invalid_argument);
  EXPECT_THROW(synthetic_prompts(1, 1, -1, 1), std::invalid_argument);
  SyntheticOptions options;
  options.range_ratio = 1;
  EXPECT_THROW(synthetic_prompts(1, 1, 1, 1, options), std::invalid_argument);
  options.range_ratio = -0.1;
  EXPECT_THROW(synthetic_prompts(1, 1, 1, 1, options), std::invalid_argument);
  options = {};
  options.shared_prefix_tokens = -1;
  EXPECT_THROW(synthetic_prompts(1, 1, 1, 1, options), std::invalid_argument);
  options = {};
  options.token_ids = TokenIdRange{5, 5};
  EXPECT_THROW(synthetic_prompts(1, 1, 1, 1, options), std::invalid_argument);
  EXPECT_TRUE(synthetic_prompts(0, 1, 1, 1).empty());
}

TEST(RequestBody, SendsTokenIdsAsTheCompletionsPromptList) {
  SyntheticOptions options;
  options.token_ids = TokenIdRange{100, 200};
  std::vector<LoadRequest> requests = load_requests_of(synthetic_prompts(2, 5, 9, 1, options));
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].max_tokens, 9);
  EXPECT_TRUE(requests[0].prompt.empty());

  LoadTarget completions{"http://x", "/v1/completions", "m", Value()};
  LoadRequest request;
  request.max_tokens = 3;
  request.prompt_token_ids = {101, 0, 1999999};
  std::string body = request_body(completions, request);
  EXPECT_NE(body.find("\"prompt\": [101, 0, 1999999]"), std::string::npos) << body;
  Value parsed = parse_own_yaml(body, "body");
  const Value* prompt = parsed.find("prompt");
  ASSERT_NE(prompt, nullptr);
  ASSERT_TRUE(prompt->is_list());
  ASSERT_EQ(prompt->items().size(), 3u);
  EXPECT_EQ(prompt->items()[2].as_int(), 1999999);
  EXPECT_EQ(parsed.find("max_tokens")->as_int(), 3);

  LoadTarget chat{"http://x", "/v1/chat/completions", "m", Value()};
  EXPECT_THROW(request_body(chat, request), std::invalid_argument);
  request.prompt = "text too";
  EXPECT_THROW(request_body(completions, request), std::invalid_argument);
  // The text form is unchanged.
  LoadRequest text{"hello", 2};
  EXPECT_NE(request_body(completions, text).find("\"prompt\": \"hello\""), std::string::npos);
}

// A ShareGPT item: {"id": .., "conversations": [{"from": .., "value": ..}, ..]}.
std::string item(const std::string& id,
                 const std::vector<std::pair<std::string, std::string>>& turns) {
  std::string s = "  {\n    \"id\": \"" + id + "\",\n    \"conversations\": [";
  for (size_t i = 0; i < turns.size(); ++i) {
    s += std::string(i ? "," : "") + "\n      {\"from\": \"" + turns[i].first +
         "\", \"value\": \"" + turns[i].second + "\"}";
  }
  return s + "\n    ],\n    \"extra\": {\"nested\": [1, {\"x\": \"]}\"}]}\n  }";
}

std::string list_of(const std::vector<std::string>& items) {
  std::string s = "[\n";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ",\n" : "") + items[i];
  return s + "\n]\n";
}

ShareGptOptions unfiltered() {
  ShareGptOptions o;
  o.min_tokens = 0;
  o.max_prompt_tokens = 0;
  o.max_total_tokens = 0;
  return o;
}

TEST(ShareGpt, TakesTheFirstHumanTurnAndTheGptTurnAfterIt) {
  TempDir dir;
  std::string path =
      dir.write("sg.json",
                list_of({item("a", {{"human", "what is one plus one?"}, {"gpt", "two, of course"}}),
                         item("b", {{"human", "alone"}}),  // one turn: skipped
                         item("c", {{"gpt", "I speak first"},
                                    {"human", "then \\\"me\\\" \\ud83d\\ude00 \\ud83d"},
                                    {"human", "and me"},
                                    {"gpt", "twelve bytes"}}),
                         item("d", {{"system", "be brief"}, {"gpt", "no human turn"}})}));
  std::vector<Prompt> prompts = sharegpt_prompts(path, 2, 1, unfiltered());
  std::set<std::string> texts;
  for (const Prompt& p : prompts) {
    texts.insert(p.text);
    EXPECT_TRUE(p.token_ids.empty());
  }
  // The pair became the emoji's 4 UTF-8 bytes; the lone surrogate U+FFFD's 3.
  std::string c_prompt = "then \"me\" \xF0\x9F\x98\x80 \xEF\xBF\xBD";
  EXPECT_EQ(texts, (std::set<std::string>{"what is one plus one?", c_prompt}));
  for (const Prompt& p : prompts) {
    if (p.text == c_prompt) {
      EXPECT_EQ(p.max_tokens, 3);              // "twelve bytes": 12 / 4
      EXPECT_EQ(p.expected_prompt_tokens, 5);  // 18 bytes: ceil(18 / 4)
    } else {
      EXPECT_EQ(p.max_tokens, 4);              // 14 bytes
      EXPECT_EQ(p.expected_prompt_tokens, 6);  // 21 bytes
    }
  }
  ShareGptOptions fixed = unfiltered();
  fixed.output_tokens = 128;
  for (const Prompt& p : sharegpt_prompts(path, 3, 1, fixed)) EXPECT_EQ(p.max_tokens, 128);
}

TEST(ShareGpt, ShufflesBySeedAndCyclesWhenShort) {
  TempDir dir;
  std::vector<std::string> items;
  for (int i = 0; i < 10; ++i) {
    items.push_back(
        item(std::to_string(i), {{"human", "prompt " + std::to_string(i)}, {"gpt", "answer"}}));
  }
  std::string path = dir.write("sg.json", list_of(items));
  std::vector<Prompt> a = sharegpt_prompts(path, 25, 4, unfiltered());
  std::vector<Prompt> b = sharegpt_prompts(path, 25, 4, unfiltered());
  std::vector<Prompt> c = sharegpt_prompts(path, 25, 5, unfiltered());
  ASSERT_EQ(a.size(), 25u);
  std::set<std::string> first_ten;
  bool differs = false, in_file_order = true;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].text, b[i].text);
    differs = differs || a[i].text != c[i].text;
    if (i < 10) {
      first_ten.insert(a[i].text);
      in_file_order = in_file_order && a[i].text == "prompt " + std::to_string(i);
    } else {
      EXPECT_EQ(a[i].text, a[i % 10].text);  // the cycle
    }
  }
  EXPECT_EQ(first_ten.size(), 10u);  // each conversation once before any repeats
  EXPECT_TRUE(differs);
  EXPECT_FALSE(in_file_order);
}

TEST(ShareGpt, AFileReadOnceGivesEachSeedsPromptsWithoutReadingItAgain) {
  // What a serve point does: the file read before the server starts, then the warm-up's and
  // each level's prompts drawn from what was read (here with the file gone in between).
  TempDir dir;
  std::vector<std::string> items;
  for (int i = 0; i < 6; ++i) {
    items.push_back(
        item(std::to_string(i), {{"human", "prompt " + std::to_string(i)}, {"gpt", "answer"}}));
  }
  std::string path = dir.write("sg.json", list_of(items));
  std::vector<Prompt> seed2 = sharegpt_prompts(path, 9, 2, unfiltered());
  std::vector<Prompt> seed3 = sharegpt_prompts(path, 4, 3, unfiltered());
  ShareGptFile file(path, unfiltered());
  ASSERT_EQ(std::remove(path.c_str()), 0);
  EXPECT_EQ(file.usable(), 6u);
  for (const auto& [seed, expected] : {std::pair{2, seed2}, std::pair{3, seed3}}) {
    std::vector<Prompt> got = file.prompts(expected.size(), seed);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].text, expected[i].text) << "seed " << seed << ", prompt " << i;
      EXPECT_EQ(got[i].max_tokens, expected[i].max_tokens);
    }
  }
}

TEST(ShareGpt, FiltersByEstimatedLengthsAsVllmDoes) {
  TempDir dir;
  std::string long_text(4100, 'x');  // 1025 tokens estimated
  std::string mid_text(2000, 'y');   // 500
  std::string path = dir.write(
      "sg.json", list_of({item("short", {{"human", "hi"}, {"gpt", "a long enough answer"}}),
                          item("terse", {{"human", "another long question"}, {"gpt", "ok"}}),
                          item("long", {{"human", long_text}, {"gpt", "a long enough answer"}}),
                          item("total", {{"human", mid_text}, {"gpt", long_text + long_text}}),
                          item("kept", {{"human", "a long enough question"},
                                        {"gpt", "a long enough answer"}})}));
  for (const Prompt& p : sharegpt_prompts(path, 4, 1)) {
    EXPECT_EQ(p.text, "a long enough question");
  }
  // A fixed output length waives the output's minimum: "terse" is kept too.
  ShareGptOptions fixed;
  fixed.output_tokens = 10;
  std::set<std::string> texts;
  for (const Prompt& p : sharegpt_prompts(path, 10, 1, fixed)) texts.insert(p.text);
  EXPECT_EQ(texts.size(), 3u);  // terse, kept and total (500 + 10 <= 2048)
}

TEST(ShareGpt, ErrorsNameTheFileAndWhere) {
  TempDir dir;
  auto check = [&](const std::string& name, const std::string& text, const std::string& part,
                   int line) {
    std::string path = dir.write(name, text);
    Error e = error_of([&] { sharegpt_prompts(path, 1, 1, unfiltered()); });
    EXPECT_EQ(e.kind(), ErrorKind::kInput) << name;
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(e.message().find(part), std::string::npos) << name << ": " << e.message();
    EXPECT_EQ(e.mark().line, line) << name << ": " << e.what();
  };
  check("object.json", "{\"conversations\": []}", "is not a JSON list", 1);
  check("empty.json", "", "is empty", 1);
  check("scalars.json", "[\n  1, 2]", "item 0 is not a JSON object", 2);
  check("broken.json", "[\n{\"conversations\": [\n  {\"from\": \"human\" \"value\": 1}]}]",
        "item 0 is not JSON", 3);
  check("cut.json", "[{\"conversations\": [{\"from\": \"human\"", "ends before its JSON list", 1);
  check("trailing.json", "[]\n[]", "has more after its JSON list", 2);
  check("between.json", "[{\"a\": 1} {\"b\": 2}]", "after item 0", 1);
  check("nothing.json", list_of({item("a", {{"human", "alone"}})}),
        "no usable conversation among its 1 items", 0);
  check("none.json", "[]", "no usable conversation among its 0 items", 0);

  Error missing = error_of([&] { sharegpt_prompts(dir.file("absent.json"), 1, 1); });
  EXPECT_EQ(missing.kind(), ErrorKind::kInput);
  EXPECT_NE(std::string(missing.what()).find("absent.json"), std::string::npos);
  EXPECT_EQ(missing.message(), "does not exist");
  // A directory is no regular file: refused as the file system's error, naming it.
  Error directory = error_of([&] { sharegpt_prompts(dir.path(), 1, 1); });
  EXPECT_EQ(directory.kind(), ErrorKind::kIo);
  EXPECT_NE(std::string(directory.what()).find(dir.path()), std::string::npos);
}

TEST(ShareGpt, ReadsAByteOrderMarkAndCompactJson) {
  TempDir dir;
  std::string path =
      dir.write("sg.json",
                "\xEF\xBB\xBF[{\"conversations\":[{\"from\":\"human\",\"value\":\"q [x] {y}\"},"
                "{\"from\":\"gpt\",\"value\":\"answer\"}]}]");
  std::vector<Prompt> prompts = sharegpt_prompts(path, 1, 1, unfiltered());
  EXPECT_EQ(prompts[0].text, "q [x] {y}");
}

TEST(ShareGpt, ItemsMayCrossTheReadersBlocks) {
  // The file is read 1 MiB at a time: a 1.5 MB prompt crosses a block, and the items after it
  // start at odd offsets.
  TempDir dir;
  std::string big(1500000, 'b');
  std::vector<std::string> items = {item("big", {{"human", big}, {"gpt", "a long answer"}})};
  for (int i = 0; i < 2000; ++i) {
    items.push_back(item(std::to_string(i), {{"human", "question " + std::to_string(i)},
                                             {"gpt", "answer with \\\\ and \\\" and ]}"}}));
  }
  std::string path = dir.write("sg.json", list_of(items));
  std::vector<Prompt> prompts = sharegpt_prompts(path, 2001, 3, unfiltered());
  std::set<std::string> texts;
  for (const Prompt& p : prompts) {
    texts.insert(p.text);
    if (p.text == big) {
      EXPECT_EQ(p.expected_prompt_tokens, 375000);
    }
  }
  EXPECT_EQ(texts.size(), 2001u);
  EXPECT_EQ(texts.count(big), 1u);
  EXPECT_EQ(texts.count("question 1999"), 1u);
}

}  // namespace
}  // namespace sweepbench::serve
