// YAML loading follows the YAML 1.2 core schema and reports problems with file:line:column.
#include "core/yaml_io.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "support/expect_error.h"

namespace sweepbench {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

Value scalar(const std::string& text) {
  Value v = parse_yaml("k: " + text, "t.yaml");
  return *v.find("k");
}

TEST(YamlCoreSchema, TypesPlainScalars) {
  EXPECT_TRUE(scalar("1e-5").is_float());
  EXPECT_DOUBLE_EQ(scalar("1e-5").as_float(), 1e-5);
  EXPECT_TRUE(scalar("3.0").is_float());
  EXPECT_TRUE(scalar(".5").is_float());
  EXPECT_TRUE(scalar("-.inf").is_float());
  EXPECT_TRUE(std::isinf(scalar("-.inf").as_float()));
  EXPECT_TRUE(std::isnan(scalar(".NaN").as_float()));
  EXPECT_EQ(scalar("42").as_int(), 42);
  EXPECT_EQ(scalar("010").as_int(), 10);  // YAML 1.2: decimal, not octal
  EXPECT_EQ(scalar("0o17").as_int(), 15);
  EXPECT_EQ(scalar("0x1F").as_int(), 31);
  EXPECT_EQ(scalar("+7").as_int(), 7);
  EXPECT_TRUE(scalar("true").as_bool());
  EXPECT_FALSE(scalar("False").as_bool());
  EXPECT_TRUE(scalar("null").is_null());
  EXPECT_TRUE(scalar("~").is_null());
  EXPECT_TRUE(scalar("").is_null());
  // YAML 1.1 habits that 1.2 drops: these are strings.
  EXPECT_EQ(scalar("yes").as_string(), "yes");
  EXPECT_EQ(scalar("off").as_string(), "off");
  EXPECT_EQ(scalar("1_000").as_string(), "1_000");
  EXPECT_EQ(scalar("00:30:00").as_string(), "00:30:00");
  EXPECT_EQ(scalar("1e5x").as_string(), "1e5x");
}

TEST(YamlCoreSchema, QuotedScalarsAreStrings) {
  EXPECT_EQ(scalar("\"8\"").as_string(), "8");
  EXPECT_EQ(scalar("'true'").as_string(), "true");
  EXPECT_EQ(scalar("'null'").as_string(), "null");
}

TEST(YamlCoreSchema, HonoursExplicitTags) {
  EXPECT_EQ(scalar("!!str 123").as_string(), "123");
  EXPECT_TRUE(scalar("!!float 3").is_float());
  EXPECT_EQ(scalar("!!int 3").as_int(), 3);
  EXPECT_THAT(error_of([] { scalar("!!int 3.5"); }).what(), HasSubstr("is not an integer"));
  EXPECT_THAT(error_of([] { scalar("!custom x"); }).what(), HasSubstr("unsupported tag"));
}

TEST(YamlErrors, NameFileLineAndColumn) {
  Error dup = error_of([] { parse_yaml("a: 1\nb:\n  c: 2\n  c: 3\n", "x.yaml"); });
  EXPECT_EQ(std::string(dup.what()),
            "x.yaml:4:3: duplicate key 'c' (each key may appear once per mapping)");
  Error syntax = error_of([] { parse_yaml("a: [1, 2\n", "x.yaml"); });
  EXPECT_THAT(syntax.what(), HasSubstr("x.yaml:"));
  EXPECT_THAT(syntax.what(), HasSubstr("YAML syntax error"));
  Error docs = error_of([] { parse_yaml("a: 1\n---\nb: 2\n", "x.yaml"); });
  EXPECT_THAT(docs.what(), HasSubstr("more than one YAML document"));
  Error big = error_of([] { scalar("99999999999999999999"); });
  EXPECT_THAT(big.what(), HasSubstr("does not fit in 64 bits"));
  Error key = error_of([] { parse_yaml("[a]: 1\n", "x.yaml"); });
  EXPECT_THAT(key.what(), HasSubstr("a mapping key must be a plain name"));
}

TEST(YamlErrors, InvalidUtf8IsRefusedWhereItIs) {
  // Found by the fuzzer: stray bytes would not survive the canonical form.
  Error e = error_of([] { parse_yaml("a: 1\nimage: ng\xff\xffc\n", "u.yaml"); });
  EXPECT_EQ(std::string(e.what()),
            "u.yaml:2:10: the text is not valid UTF-8 (byte 0xff) (save the file as UTF-8)");
  EXPECT_EQ(parse_yaml("image: caf\xc3\xa9\n", "ok.yaml").find("image")->as_string(),
            "caf\xc3\xa9");
}

TEST(YamlErrors, EscapesYamlCppDecodesWronglyAreRefused) {
  // Found by the fuzzer: yaml-cpp turns "\N" into the lone byte 0x85.
  EXPECT_EQ(std::string(error_of([] { parse_yaml("a: \"x\\Ny\"\n", "e.yaml"); }).what()),
            "e.yaml:1:4: the decoded string is not valid UTF-8 (the escapes \\N and \\_ are not "
            "supported; write the characters themselves)");
  EXPECT_THAT(error_of([] { parse_yaml("\"k\\_\": 1\n", "e.yaml"); }).what(),
              HasSubstr("not valid UTF-8"));
  EXPECT_EQ(parse_yaml("a: \"\\u00e9\\t\"\n", "e.yaml").find("a")->as_string(), "\xc3\xa9\t");
}

TEST(YamlErrors, StrayFlowIndicatorsFailInsteadOfHanging) {
  // Found by the fuzzer: yaml-cpp 0.7's LoadAll never returns on these.
  for (const char* text : {",}", ",", "a: 1\n,\n"}) {
    EXPECT_THAT(error_of([&] { parse_yaml(text, "h.yaml"); }).what(),
                HasSubstr("YAML syntax error"))
        << text;
  }
  EXPECT_EQ(std::string(error_of([] { parse_yaml("a: 1\n---\nb: 2\n", "x.yaml"); }).what()),
            "x.yaml:3:1: more than one YAML document (remove the '---' separator)");
}

TEST(YamlErrors, HostileInputFailsCleanly) {
  // A billion-laughs alias bomb: nine levels of ten aliases would be 10^9 nodes.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  std::string prev = "a";
  for (char c = 'b'; c <= 'j'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [*" + prev + ", *" + prev + ", *" + prev + ", *" +
            prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev +
            ", *" + prev + "]\n";
    prev = std::string(1, c);
  }
  EXPECT_THAT(error_of([&] { parse_yaml(bomb, "bomb.yaml"); }).what(),
              HasSubstr("after expanding aliases"));
  std::string deep = "a: " + std::string(100, '[') + std::string(100, ']');
  EXPECT_THAT(error_of([&] { parse_yaml(deep, "deep.yaml"); }).what(),
              HasSubstr("nesting deeper than"));
}

TEST(YamlIo, MarksPointAtValues) {
  Value v = parse_yaml("train:\n  lr: 0.1\n", "m.yaml");
  const Value* lr = v.find_path("train.lr");
  ASSERT_NE(lr, nullptr);
  EXPECT_EQ(lr->mark().str(), "m.yaml:2:7");
}

TEST(CanonicalYaml, SortsKeysAndRoundTrips) {
  Value v = parse_yaml(
      "z: 1\na:\n  y: [\"s\", 2, 2.5, null, true]\n  b: {}\n  c: []\n  x: 1e-5\n  w: .inf\n"
      "  'odd key': \"tab\\there\"\n",
      "c.yaml");
  std::string text = emit_canonical_yaml(v);
  EXPECT_EQ(text,
            "a:\n"
            "  b: {}\n"
            "  c: []\n"
            "  \"odd key\": \"tab\\there\"\n"
            "  w: .inf\n"
            "  x: 1e-05\n"
            "  y: [\"s\", 2, 2.5, null, true]\n"
            "z: 1\n");
  EXPECT_EQ(parse_yaml(text, "again.yaml"), v);
  EXPECT_EQ(emit_canonical_yaml(parse_yaml(text, "again.yaml")), text);
}

TEST(Json, EmitsInsertionOrderOrSorted) {
  Value v = parse_yaml("b: 1\na: [x, 2.0]\n", "j.yaml");
  EXPECT_EQ(emit_json(v, -1), R"({"b": 1, "a": ["x", 2.0]})");
  EXPECT_EQ(emit_json(v, -1, true), R"({"a": ["x", 2.0], "b": 1})");
  EXPECT_EQ(emit_json(v, 2), "{\n  \"b\": 1,\n  \"a\": [\n    \"x\",\n    2.0\n  ]\n}");
  // JSON read back through the YAML loader keeps its types.
  EXPECT_EQ(parse_yaml(emit_json(v, 2), "back.json"), v);
}

}  // namespace
}  // namespace sweepbench
