// The parsers of src/config/parsers/ as the rest of sweepbench sees them: each named once, in the
// schema's choices for command.parser, with metrics of its own name.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "config/command_spec.h"
#include "config/parsers/parser.h"
#include "config/schema.h"

namespace sweepbench {
namespace {

TEST(ParserRegistry, EachParserIsAChoiceOfCommandParserWithMetricsOfItsOwn) {
  const auto& all = parsers();
  ASSERT_GE(all.size(), 6u);
  std::set<std::string> names;
  for (const Parser& p : all) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_EQ(p.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-"), std::string::npos)
        << p.name;
    EXPECT_EQ(find_parser(p.name), &p);
    const std::vector<MetricSpec> metrics = parser_metrics(p.name);
    ASSERT_FALSE(metrics.empty()) << p.name;
    std::set<std::string> metric_names;
    for (const MetricSpec& m : metrics) {
      EXPECT_EQ(m.parser, p.name) << m.name;
      EXPECT_TRUE(metric_names.insert(m.name).second) << p.name << ": " << m.name;
    }
  }
  Schema::Lookup key = Schema::get().lookup("command.parser");
  ASSERT_EQ(key.kind, Schema::Lookup::Kind::kKey);
  std::vector<std::string> choices = {"none"};
  choices.insert(choices.end(), names.begin(), names.end());
  EXPECT_EQ(key.spec->choices, choices);
  EXPECT_EQ(find_parser("none"), nullptr);
  EXPECT_TRUE(parser_metrics("none").empty());
}

}  // namespace
}  // namespace sweepbench
