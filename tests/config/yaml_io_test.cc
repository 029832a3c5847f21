// YAML loading follows the YAML 1.2 core schema and reports problems with file:line:column.
#include "config/yaml_io.h"

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
  Error e = error_of([] {
    parse_yaml(
        "a: 1\nimage: ng\xff\xff"
        "c\n",
        "u.yaml");
  });
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

// What sweepbench writes, with every kind of value and key its files can hold.
Value own_file_value() {
  Value inner = Value::map();
  inner.set("micro_batch", Value::integer(8));
  inner.set("lr", Value::real(1e-05));
  inner.set("three", Value::real(3.0));
  inner.set("neg", Value::real(-0.25));
  inner.set("big", Value::integer(-9223372036854775807 - 1));
  inner.set("none", Value::null());
  inner.set("on", Value::boolean(true));
  inner.set("off", Value::boolean(false));
  inner.set("empty_map", Value::map());
  inner.set("empty_list", Value::list());
  Value list = Value::list();
  list.items().push_back(Value::string("--bind"));
  list.items().push_back(Value::string("a \"quoted\" \\ back\\slash\ttab\nnewline \x01 control"));
  list.items().push_back(Value::string("unicode: é ü 東京 🚀"));
  list.items().push_back(Value::integer(-3));
  list.items().push_back(Value::null());
  Value nested = Value::map();
  nested.set("NCCL_DEBUG", Value::string("INFO"));
  nested.set("key with: colon", Value::string("# not a comment"));
  nested.set("", Value::string(""));
  list.items().push_back(nested);
  inner.set("list", list);
  Value root = Value::map();
  root.set("train", inner);
  root.set("true", Value::string("a key that reads as a boolean"));
  root.set("123", Value::string("yes"));
  root.set("tag", Value::string("micro_batch=8.seq_len=128.ws=2.bac5ba59.r0"));
  return root;
}

TEST(OwnYaml, ReadsCanonicalYamlAndJsonAsParseYamlDoes) {
  Value v = own_file_value();
  for (const std::string& text :
       {emit_canonical_yaml(v), emit_json(v, 2), emit_json(v, -1),
        "# a header comment\n# config_hash: 00\n" + emit_canonical_yaml(v)}) {
    SCOPED_TRACE(text);
    Value fast = parse_own_yaml(text, "own.yaml");
    EXPECT_EQ(fast, parse_yaml(text, "own.yaml"));
    EXPECT_EQ(fast, v);
    EXPECT_EQ(fast.mark().column, 0) << "the direct parser read it (its marks have no column)";
    EXPECT_THAT(fast.find("train")->find("lr")->mark().str(), ::testing::StartsWith("own.yaml:"));
  }
  // Non-finite floats: canonical YAML spells them; JSON has no spelling and writes null.
  Value f = Value::map();
  f.set("nan", Value::real(NAN));
  f.set("inf", Value::real(-INFINITY));
  Value back = parse_own_yaml(emit_canonical_yaml(f), "f.yaml");
  EXPECT_TRUE(std::isnan(back.find("nan")->as_float()));
  EXPECT_EQ(back.find("inf")->as_float(), -INFINITY);
  EXPECT_EQ(back.find("nan")->mark().str(), "f.yaml:2");  // keys sorted: inf, then nan
}

TEST(OwnYaml, AnythingElseGoesToParseYaml) {
  // Outside the subset: each is read as parse_yaml reads it, marks with columns and all.
  for (const char* text :
       {"a: 1 # a comment after a value\n", "a:\n  - 1\n  - 2\n", "a: &x 1\nb: *x\n", "a: ~\n",
        "a: 'single'\n", "a:\n\tb: 1\n", "a: plain words\n", "a: !!str 1\n", "a:\n    b: 1\n",
        "a: -\n", "a:\nb: 1\n", "- 1\n- 2\n", "{\"a\": \"\\ud83d\\ude80\"}", "a: \"x\ny\"\n",
        "{\"a\": 1,}"}) {
    SCOPED_TRACE(text);
    Value own, parsed;
    std::string own_error, parsed_error;
    try {
      own = parse_own_yaml(text, "x.yaml");
    } catch (const Error& e) {
      own_error = e.mark().str() + ": " + e.message();
    }
    try {
      parsed = parse_yaml(text, "x.yaml");
    } catch (const Error& e) {
      parsed_error = e.mark().str() + ": " + e.message();
    }
    EXPECT_EQ(own_error, parsed_error);
    EXPECT_EQ(own, parsed);
    if (parsed_error.empty()) {
      EXPECT_EQ(own.mark().str(), parsed.mark().str());
    }
  }
}

TEST(OwnYaml, ItsErrorsAreParseYamlsErrors) {
  Error dup = error_of([] { parse_own_yaml("a: 1\na: 2\n", "d.yaml"); });
  EXPECT_EQ(dup.mark().str(), "d.yaml:2:1");
  EXPECT_THAT(dup.message(), HasSubstr("duplicate key 'a'"));
  Error big = error_of([] { parse_own_yaml("a: 99999999999999999999\n", "b.yaml"); });
  EXPECT_THAT(big.message(), HasSubstr("does not fit in 64 bits"));
  Error bad = error_of([] { parse_own_yaml("a: \"\xff\"\n", "u.yaml"); });
  EXPECT_THAT(bad.message(), HasSubstr("not valid UTF-8"));
}
}  // namespace
}  // namespace sweepbench
