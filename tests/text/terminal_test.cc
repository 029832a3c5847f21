// Text for terminals: what a terminal acts on is shown escaped; everything
// else, UTF-8 included, is left as it is; a stream does it a line at a time.
#include "text/terminal.h"

#include <gtest/gtest.h>

#include <sstream>

namespace sweepbench {
namespace {

TEST(TerminalSafe, EscapesWhatATerminalActsOn) {
  EXPECT_EQ(terminal_safe("plain text, ünïcode ✓ and \\ stay"),
            "plain text, ünïcode ✓ and \\ stay");
  EXPECT_EQ(terminal_safe("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(terminal_safe("\x1b]0;title\x07"), "\\x1b]0;title\\x07");  // OSC: the window title
  EXPECT_EQ(terminal_safe("a\rb\bc\x7f"), "a\\x0db\\x08c\\x7f");
  EXPECT_EQ(terminal_safe(std::string("nul\0", 4)), "nul\\x00");
  EXPECT_EQ(terminal_safe("line\n\tindented"), "line\n\tindented");
  EXPECT_EQ(terminal_safe("line\n\tcell", false), "line\\x0a\\x09cell");
  // C1 controls (CSI as U+009B) and bidirectional overrides, which reorder what is shown.
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "31m"),
            "\\u{009b}31m");
  EXPECT_EQ(terminal_safe("abc\xe2\x80\xae"
                          "fed"),
            "abc\\u{202e}fed");
  // Bytes that are not UTF-8 (a lone 0x9b is CSI to an 8-bit terminal), and cut sequences.
  EXPECT_EQ(terminal_safe("\x9b"
                          "2J \xff \xc3"),
            "\\x9b2J \\xff \\xc3");
}

TEST(TerminalSafe, StreamEscapesALineAtATimeAndWaitsForCutCharacters) {
  std::ostringstream target;
  {
    TerminalSafeStream out(target);
    out << "# 1/2 running x=\x1b[2J" << 5 << "\n";
    EXPECT_EQ(target.str(), "# 1/2 running x=\\x1b[2J5\n");
    out << "caf\xc3" << std::flush;  // a flush between the two bytes of é
    EXPECT_EQ(target.str(), "# 1/2 running x=\\x1b[2J5\ncaf");
    out << "\xa9 ok\n";
    EXPECT_EQ(target.str(), "# 1/2 running x=\\x1b[2J5\ncafé ok\n");
    out << "no newline \x1b";
  }
  EXPECT_EQ(target.str(), "# 1/2 running x=\\x1b[2J5\ncafé ok\nno newline \\x1b");
}

}  // namespace
}  // namespace sweepbench
