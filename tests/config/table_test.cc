// config/table.h: one table model and its printers.
#include "config/table.h"

#include <gtest/gtest.h>

#include <sstream>

#include "text/error.h"

namespace sweepbench {
namespace {

std::string print(TableFormat format, TableOptions options = {}) {
  std::ostringstream out;
  TableWriter t({"index", "name", "value"}, format, out, options);
  t.row({Value::integer(0), Value::string("a|b, \"c\""), Value::real(123.456789)});
  t.row({Value::integer(12), Value::null(), Value::real(0.000012345)});
  t.finish();
  return out.str();
}

TEST(HumanNumber, AboutFourSignificantDigits) {
  EXPECT_EQ(human_number(123456.0), "123456");
  EXPECT_EQ(human_number(123.456), "123.5");
  EXPECT_EQ(human_number(12.3456), "12.35");
  EXPECT_EQ(human_number(0.0123456), "0.01235");
  EXPECT_EQ(human_number(2.5), "2.5");
  EXPECT_EQ(human_number(-2.0), "-2");
  EXPECT_EQ(human_number(0.0), "0");
  EXPECT_EQ(human_number(1.5e-05), "1.5e-05");
  EXPECT_EQ(human_number(1.2345678e17), "1.235e+17");
}

TEST(TableWriter, TextAlignsTheIndexRightAndTheRestLeft) {
  EXPECT_EQ(print(TableFormat::kText),
            "#index  name      value\n"
            "     0  a|b, \"c\"  123.456789\n"
            "    12            1.2345e-05\n");
  // Rounded for people, and printed as it comes when the widths were measured first.
  TableWidths widths({"index", "name", "value"});
  widths.add({Value::integer(12), Value::string("a|b, \"c\""), Value::real(123.456789)}, true);
  std::string rounded = print(TableFormat::kText, TableOptions{true, widths.widths()});
  EXPECT_NE(rounded.find("  123.5\n"), std::string::npos) << rounded;
  EXPECT_NE(rounded.find("  1.234e-05\n"), std::string::npos) << rounded;
}

TEST(TableWriter, CsvAndJsonKeepFullPrecisionAndEscape) {
  EXPECT_EQ(print(TableFormat::kCsv, TableOptions{true, {}}),
            "index,name,value\n0,\"a|b, \"\"c\"\"\",123.456789\n12,,1.2345e-05\n");
  EXPECT_EQ(print(TableFormat::kJsonl),
            "{\"index\": 0, \"name\": \"a|b, \\\"c\\\"\", \"value\": 123.456789}\n"
            "{\"index\": 12, \"name\": null, \"value\": 1.2345e-05}\n");
  std::string json = print(TableFormat::kJson);
  EXPECT_EQ(json.rfind("[\n  {\n    \"index\": 0,\n", 0), 0u) << json;
  EXPECT_EQ(json.substr(json.size() - 7), "\n  }\n]\n") << json;
}

TEST(TableWriter, MarkdownEscapesPipesAndRounds) {
  EXPECT_EQ(print(TableFormat::kMarkdown, TableOptions{true, {}}),
            "| index | name | value |\n|---|---|---|\n"
            "| 0 | a\\|b, \"c\" | 123.5 |\n| 12 |  | 1.234e-05 |\n");
}

// A value holding escape sequences reached the terminal raw in the text and
// Markdown tables (recolouring, moving the cursor, retitling the window).
TEST(TableWriter, TextAndMarkdownShowControlCharactersEscaped) {
  for (TableFormat f : {TableFormat::kText, TableFormat::kMarkdown}) {
    std::ostringstream out;
    TableWriter t({"tag", "reason\x1b[2J"}, f, out);
    t.row({Value::string("x=\x1b[31mred"), Value::string("a\nb\r\x07\x1b]0;title\x07 \xff")});
    t.finish();
    std::string text = out.str();
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
    EXPECT_EQ(text.find('\r'), std::string::npos) << text;
    EXPECT_NE(text.find("x=\\x1b[31mred"), std::string::npos) << text;
    EXPECT_NE(text.find("a\\x0ab\\x0d\\x07\\x1b]0;title\\x07 \\xff"), std::string::npos) << text;
    EXPECT_NE(text.find("reason\\x1b[2J"), std::string::npos) << text;
  }
}

// Case 10: a text cell beginning with = + - @ ran as a formula where the CSV was opened. With
// spreadsheet_safe it is text; numbers stay numbers; without it the data is exact.
TEST(TableWriter, SpreadsheetSafeCsvQuotesFormulasNotNumbers) {
  auto csv = [](bool safe) {
    std::ostringstream out;
    TableWriter t({"a", "b", "c", "d", "e"}, TableFormat::kCsv, out, TableOptions{false, {}, safe});
    t.row({Value::string("=HYPERLINK(\"http://x\",\"y\")"), Value::string("+1"),
           Value::string("@SUM(A1)"), Value::real(-1.5), Value::string("-x")});
    t.finish();
    return out.str();
  };
  EXPECT_EQ(csv(true),
            "a,b,c,d,e\n\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",'+1,'@SUM(A1),-1.5,'-x\n");
  EXPECT_EQ(csv(false),
            "a,b,c,d,e\n\"=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",+1,@SUM(A1),-1.5,-x\n");
  EXPECT_EQ(spreadsheet_text("\tx"), "'\tx");
  EXPECT_EQ(spreadsheet_text("x=1"), "x=1");
}

// Case 11: bytes that are not UTF-8 and NULs are written as U+FFFD, and counted.
TEST(TableWriter, CsvIsValidUtf8) {
  std::ostringstream out;
  TableWriter t({"a"}, TableFormat::kCsv, out);
  t.row({Value::string(std::string("ok \xff\xfe x\0y \xc3\xa9", 12))});
  t.finish();
  EXPECT_EQ(out.str(), "a\nok \xEF\xBF\xBD\xEF\xBF\xBD x\xEF\xBF\xBDy \xc3\xa9\n");
  EXPECT_EQ(t.replaced(), 3u);
}

TEST(TableFormat, NamesAndExtensions) {
  std::vector<TableFormat> all = {TableFormat::kCsv, TableFormat::kMarkdown, TableFormat::kText};
  EXPECT_EQ(parse_table_format("md", all), TableFormat::kMarkdown);
  EXPECT_EQ(parse_table_format("table", all), TableFormat::kText);
  EXPECT_EQ(table_format_of_path("x/out.csv", all), TableFormat::kCsv);
  try {
    parse_table_format("xml", all);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.hint(), "use csv, md or table");
  }
  EXPECT_THROW(table_format_of_path("out.table", all), Error);  // text has no extension
}

}  // namespace
}  // namespace sweepbench
