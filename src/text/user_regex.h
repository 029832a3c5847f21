// The regular expressions users write (command metrics, success, fail and out-of-memory
// patterns): RE2's syntax, compiled once, matched in time linear in the text and without
// recursion, so that no pattern and no line can hang or crash a point (docs/commands.md,
// "Regular expressions"). RE2 stays in user_regex.cc; nothing else includes it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "text/error.h"

namespace re2 {
class RE2;
}

namespace sweepbench {

class UserRegex {
 public:
  // Throws Error::input at `mark` for `key` when RE2 refuses the pattern, with RE2's reason and,
  // for what ECMAScript has and RE2 has not (lookaround, backreferences), what to write instead.
  UserRegex(const std::string& pattern, const Mark& mark, const std::string& key);

  const std::string& pattern() const { return pattern_; }
  // How many capture groups it has.
  int groups() const;
  // Whether it matches somewhere in `text`.
  bool search(std::string_view text) const;
  // Whether it matches all of `text`.
  bool full_match(std::string_view text) const;
  // Calls fn with group `group` (0: the whole match) of every match in `text`, left to right,
  // matches not overlapping (an empty match moves on by one byte). A group that took no part in
  // a match gives an empty text.
  void for_each_match(std::string_view text, int group,
                      const std::function<void(std::string_view)>& fn) const;

 private:
  std::string pattern_;
  std::shared_ptr<const re2::RE2> re_;
};

// Whether `c`, one UTF-8 character, is a word character as Python's `re` has it for str patterns
// (`\w`: str.isalnum() or '_'), that is a Unicode letter or number (categories L and N, as RE2's
// tables have them) or '_'. What fairseq2's sweep tagger keeps of a string.
bool is_python_word_char(std::string_view c);

}  // namespace sweepbench
