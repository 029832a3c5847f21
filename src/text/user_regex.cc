#include "text/user_regex.h"

#include <re2/re2.h>

#include <optional>
#include <vector>

namespace sweepbench {
namespace {

// What an ECMAScript user most likely wrote when RE2 refuses a pattern.
std::string hint_for(const std::string& pattern, const std::string& reason) {
  const std::string syntax = "RE2 syntax (docs/commands.md#regular-expressions)";
  if (pattern.find("(?=") != std::string::npos || pattern.find("(?!") != std::string::npos ||
      pattern.find("(?<=") != std::string::npos || pattern.find("(?<!") != std::string::npos) {
    return "lookahead and lookbehind are not supported: match the context too and take the "
           "number from a capture group; " +
           syntax;
  }
  if (reason.find("escape sequence") != std::string::npos &&
      pattern.find_first_of("123456789", pattern.find('\\')) != std::string::npos) {
    return "backreferences (\\1) are not supported; " + syntax;
  }
  if (pattern.find("(?<") != std::string::npos) {
    return "name a group (?P<name>...); " + syntax;
  }
  return "write " + syntax;
}

}  // namespace

UserRegex::UserRegex(const std::string& pattern, const Mark& mark, const std::string& key)
    : pattern_(pattern) {
  RE2::Options options;
  options.set_log_errors(false);
  // Texts are matched as UTF-8 (RE2's default): '.' is one character; a byte that is not UTF-8
  // is matched only by \C.
  auto re = std::make_shared<const RE2>(pattern, options);
  if (!re->ok()) {
    throw Error::input(mark, key, "'" + pattern + "' is not a regular expression: " + re->error(),
                       hint_for(pattern, re->error()));
  }
  re_ = std::move(re);
}

int UserRegex::groups() const { return re_->NumberOfCapturingGroups(); }

bool UserRegex::search(std::string_view text) const {
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

bool UserRegex::full_match(std::string_view text) const {
  return RE2::FullMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

void UserRegex::for_each_match(std::string_view text, int group,
                               const std::function<void(std::string_view)>& fn) const {
  re2::StringPiece all(text.data(), text.size());
  std::vector<re2::StringPiece> sub(static_cast<size_t>(group) + 1);
  size_t at = 0;
  std::optional<size_t> previous_end;
  while (at <= all.size()) {
    if (!re_->Match(all, at, all.size(), RE2::UNANCHORED, sub.data(), group + 1)) break;
    const re2::StringPiece& whole = sub[0];
    size_t begin = static_cast<size_t>(whole.data() - all.data());
    size_t end = begin + whole.size();
    // An empty match right after the previous match is not one (as Go's FindAll and
    // Python's findall before 3.7 count: '.*' matches "abc" once).
    if (!(whole.empty() && previous_end == begin)) {
      const re2::StringPiece& g = sub[static_cast<size_t>(group)];
      fn(g.data() == nullptr ? std::string_view() : std::string_view(g.data(), g.size()));
    }
    previous_end = end;
    at = whole.empty() ? end + 1 : end;
  }
}

bool is_python_word_char(std::string_view c) {
  static const UserRegex word(R"([\pL\pN_])", Mark(), "");
  return word.full_match(c);
}

}  // namespace sweepbench
