// Quoting for POSIX sh, done once, where a command becomes script text (CONTRIBUTING.md item 2).
//
// Commands stay std::vector<std::string> everywhere else. shell_quote leaves words made only of
// characters the shell never interprets as they are and single-quotes the rest, so a value such
// as `$(touch /tmp/x)`, `"; rm -rf ~; "`, a backtick or a newline reaches the program verbatim.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sweepbench {

std::string shell_quote(std::string_view word);

// The words quoted and joined by spaces: a command line sh runs as the argv given.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace sweepbench
