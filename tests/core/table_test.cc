// core/table.h: one table model and its printers (issue 15).
#include "core/table.h"

#include <gtest/gtest.h>

#include <sstream>

#include "core/error.h"

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
