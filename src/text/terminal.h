// Text for people's terminals (docs/security.md): what a sweep value, a program's output or a
// reason holds reaches a terminal only escaped, so that no escape sequence in it can recolour,
// move the cursor, retitle the window or rewrite what was printed before. Machine formats (CSV,
// JSON, the rank files) keep the data exact and never pass through here.
#pragma once

#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace sweepbench {

// `text` with what a terminal would act on shown escaped: C0 controls but newline and tab,
// and DEL, as \xNN (ESC: \x1b); C1 controls (U+0080 to U+009F) and the bidirectional overrides
// and isolates (U+202A to U+202E, U+2066 to U+2069, which reorder what is shown) as \u{NNNN};
// bytes that are not UTF-8 as \xNN. Everything else, other UTF-8 included, is left as it is.
// `keep_newlines` false: newline and tab are escaped too (one cell, one line).
std::string terminal_safe(std::string_view text, bool keep_newlines = true);

// An output stream for people: everything written to it reaches `target` through
// terminal_safe, a line (or a flush) at a time; a UTF-8 character cut by a flush waits for its
// end. For the standard error of every tool and the standard output of text reports.
class TerminalSafeStream : public std::ostream {
 public:
  explicit TerminalSafeStream(std::ostream& target);
  ~TerminalSafeStream() override;

 private:
  std::unique_ptr<std::streambuf> buf_;
};

}  // namespace sweepbench
