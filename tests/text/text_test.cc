#include "text/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace sweepbench {
namespace {

TEST(FormatFloatRepr, MatchesPythonRepr) {
  // Expected strings are what CPython 3.11's repr() prints for the same doubles.
  const std::pair<double, const char*> cases[] = {
      {2.0, "2.0"},
      {0.2, "0.2"},
      {1e-05, "1e-05"},
      {0.0001, "0.0001"},
      {1e16, "1e+16"},
      {1e15, "1000000000000000.0"},
      {123456789.123, "123456789.123"},
      {1.5e-7, "1.5e-07"},
      {-0.0, "-0.0"},
      {3e-4, "0.0003"},
      {1e22, "1e+22"},
      {0.1 + 0.2, "0.30000000000000004"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {100.0, "100.0"},
      {12345678901234567.0, "1.2345678901234568e+16"},
      {1234567890123456.0, "1234567890123456.0"},
      {-2.5, "-2.5"},
  };
  for (const auto& [value, expected] : cases) EXPECT_EQ(format_float_repr(value), expected);
  EXPECT_EQ(format_float_repr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format_float_repr(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(format_float_repr(std::nan("")), "nan");
}

TEST(FormatFloatRepr, RoundTrips) {
  for (double v : {0.1, 1.0 / 3.0, 6.02214076e23, 2.2250738585072014e-308, 9007199254740993.0}) {
    EXPECT_EQ(*parse_double(format_float_repr(v)), v);
  }
}

TEST(QuoteJson, EscapesControlsAndInvalidUtf8) {
  EXPECT_EQ(quote_json("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(quote_json("line\nnext\ttab"), R"("line\nnext\ttab")");
  EXPECT_EQ(quote_json(std::string("\x01", 1)), R"("\u0001")");
  EXPECT_EQ(quote_json("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // valid UTF-8 passes through
  EXPECT_EQ(quote_json("bad\xff"), R"("bad\u00ff")");       // a stray byte is escaped
}

TEST(ClosestMatch, FindsPlausibleTypos) {
  std::vector<std::string> keys = {"train.micro_batch", "train.grad_accum", "data.seq_len"};
  EXPECT_EQ(closest_match("train.microbatch", keys), "train.micro_batch");
  EXPECT_EQ(closest_match("data.seqlen", keys), "data.seq_len");
  EXPECT_EQ(closest_match("completely.different", keys), std::nullopt);
  // A shortened name, too far for a typo: the name it shortens with the fewest other parts.
  const std::vector<std::string> columns = {"tokens_per_second_per_device",
                                            "train_tokens_per_second", "step_time_s"};
  EXPECT_EQ(closest_match("tokens_per_sec", columns), "train_tokens_per_second");
  EXPECT_EQ(closest_match("step_time", columns), "step_time_s");
  EXPECT_EQ(closest_match("tokens", columns), std::nullopt);      // one part fits too much
  EXPECT_EQ(closest_match("per_tokens", columns), std::nullopt);  // not in order
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(SplitCommas, ListsInRepeatedOptions) {
  EXPECT_EQ(split_commas({"a,b", " c ", "", "d,,e,"}),
            (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_TRUE(split_commas({",", ""}).empty());
}

TEST(ParseInt64, RejectsJunkAndOverflow) {
  EXPECT_EQ(parse_int64("42"), 42);
  EXPECT_EQ(parse_int64("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(parse_int64("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(parse_int64("9223372036854775808"), std::nullopt);
  EXPECT_EQ(parse_int64("12x"), std::nullopt);
  EXPECT_EQ(parse_int64(""), std::nullopt);
  EXPECT_EQ(parse_int64("ff", 16), 255);
}

TEST(LastSaid, TheLastLineThatSaysSomethingOrMpirunsMessage) {
  EXPECT_EQ(last_said("first\n  error: it broke  \n\n"), "error: it broke");
  EXPECT_EQ(last_said("done\n====\n"), "done");  // no letter: decoration
  EXPECT_EQ(last_said(""), "");
  // A GNU program's pointer to its help is not what went wrong; the line before it is.
  EXPECT_EQ(last_said("gzip: invalid option -- '0'\nTry `gzip --help' for more information.\n"),
            "gzip: invalid option -- '0'");
  EXPECT_EQ(last_said("ls: cannot access 'x'\nTry 'ls --help' for more information.\n"),
            "ls: cannot access 'x'");
  // Open MPI's message between rules of dashes: its first paragraph, not its last line.
  const std::string rule(74, '-');
  const std::string mpirun =
      rule +
      "\nThere are not enough slots available in the system to satisfy the 3\n"
      "slots that were requested by the application:\n\n  bench-train\n\n"
      "Either request fewer slots.\n" +
      rule + "\n";
  EXPECT_EQ(last_said(mpirun),
            "There are not enough slots available in the system to satisfy the 3 slots that were "
            "requested by the application:");
  // A line after the message is what was said last.
  EXPECT_EQ(last_said(mpirun + "bench-train: error: x\n"), "bench-train: error: x");
  // Open MPI's asides after it say nothing.
  EXPECT_EQ(last_said(mpirun + "[vm:01234] 1 more process has sent help message help-mpi-api.txt\n"
                               "[vm:01234] Set MCA parameter \"orte_base_help_aggregate\" to 0 "
                               "to see all help / error messages\n"
                               "Set MCA parameter \"orte_base_help_aggregate\" to 0\n"),
            last_said(mpirun));
  // MPI_ABORT's notice: the program's own line before it.
  EXPECT_EQ(last_said("bench-train: error: the data file is gone\n" + rule +
                      "\nMPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD\n"
                      "with errorcode 2.\n\nNOTE: invoking MPI_ABORT ...\n" +
                      rule + "\n"),
            "bench-train: error: the data file is gone");
}

TEST(ByteSize, TheUnitTheNumberAsksForInOneSystem) {
  EXPECT_EQ(byte_size(0), "0 B");
  EXPECT_EQ(byte_size(512), "512 B");
  EXPECT_EQ(byte_size(1536), "1.50 KiB");
  EXPECT_EQ(byte_size(246.0 * 1024 * 1024), "246 MiB");
  EXPECT_EQ(byte_size(1.24 * 1024 * 1024 * 1024), "1.24 GiB");
  EXPECT_EQ(byte_size(125.51 * 1024 * 1024 * 1024), "126 GiB");
  EXPECT_EQ(byte_size(1023.9 * 1024 * 1024), "1.00 GiB");  // not "1024 MiB"
  EXPECT_EQ(byte_size(2.59e9, false), "2.59 GB");
  EXPECT_EQ(byte_size(80e9, false), "80.0 GB");
  EXPECT_EQ(byte_size(999.99e6, false), "1.00 GB");
  EXPECT_EQ(byte_size(3e6, false), "3.00 MB");
}

}  // namespace
}  // namespace sweepbench
