// The command section, params and launch.setup as configs: what is accepted, hashed and tagged,
// and the error (file:line, key, fix) for each thing that is refused before a sweep runs.
#include "config/command_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "config/yaml_io.h"
#include "support/expect_error.h"

namespace sweepbench {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

Value resolved(const std::string& text) {
  return resolve_config(normalize_partial_config(parse_yaml(text, "c.yaml")));
}
std::string error_text(const std::string& text) {
  return error_of([&] { resolved(text); }).what();
}
const std::string kBase = "benchmark: command\ncommand:\n  argv: [prog, --x]\n";

TEST(CommandSpec, ReadsArgvEnvWorkdirAndMetrics) {
  CommandSpec s = command_spec_of(
      resolved("benchmark: command\n"
               "params: {lr: 0.001, modules: [q, v], tag: x}\n"
               "command:\n"
               "  argv: [python3, train.py, '--lr={params.lr}', '{out}/o', '{rank}']\n"
               "  env: {HF_HOME: '{out}/hf', N: 3}\n"
               "  workdir: '{out}/w'\n"
               "  metrics:\n"
               "    - {name: tps, unit: tok/s, regex: 'tps ([0-9.]+)', reduce: mean}\n"
               "    - {name: loss, from: stderr, regex: 'loss=(\\S+)', group: 1, optional: true}\n"
               "    - {name: lines, from: out.log, regex: 'x', reduce: count}\n"
               "    - {name: rt, unit: s, from: json all_results.json, pointer: /train_runtime}\n"
               "    - {name: st, from: state.json, pointer: '/log_history/*/loss', reduce: all}\n"
               "    - {name: ts, from: stdout, pointer: /avg_ts}\n"));
  EXPECT_EQ(s.argv, (std::vector<std::string>{"python3", "train.py", "--lr={params.lr}", "{out}/o",
                                              "{rank}"}));
  EXPECT_EQ(s.env.at("N"), "3");
  EXPECT_EQ(*s.workdir, "{out}/w");
  ASSERT_EQ(s.metrics.size(), 6u);
  EXPECT_EQ(s.metrics[0].source, MetricSource::kStdout);
  EXPECT_EQ(s.metrics[0].reduce, MetricReduce::kMean);
  EXPECT_EQ(s.metrics[0].group, 1);
  EXPECT_TRUE(s.metrics[0].required);
  EXPECT_EQ(s.metrics[1].source, MetricSource::kStderr);
  EXPECT_FALSE(s.metrics[1].required);
  EXPECT_EQ(s.metrics[2].source, MetricSource::kFile);
  EXPECT_EQ(s.metrics[2].group, 0);  // no capture group: the whole match
  EXPECT_EQ(s.metrics[3].source, MetricSource::kJson);
  EXPECT_EQ(s.metrics[3].file, "all_results.json");
  EXPECT_EQ(s.metrics[4].source, MetricSource::kJson);
  EXPECT_EQ(s.metrics[4].file, "state.json");
  EXPECT_EQ(s.metrics[5].file, "stdout");  // JSON lines in the output
  EXPECT_EQ(s.oom_patterns, default_oom_patterns());
  EXPECT_EQ(*s.exit_code, 0);
}

TEST(CommandSpec, ParserMetricsComeFirstAndCanBeReplaced) {
  CommandSpec s = command_spec_of(
      resolved(kBase + "  parser: hf-trainer\n  metrics:\n"
                       "    - {name: train_loss, regex: 'L=(\\d+)', optional: true}\n"
                       "    - {name: mine, regex: 'm=(\\d+)'}\n"));
  std::vector<std::string> names;
  for (const MetricSpec& m : s.metrics) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"train_runtime", "train_samples_per_second",
                                             "train_steps_per_second", "train_loss", "eval_loss",
                                             "eval_samples_per_second", "eval_steps_per_second",
                                             "perplexity", "mine"}));
  EXPECT_EQ(s.metrics[3].regex, "L=(\\d+)");
  EXPECT_FALSE(s.metrics[3].required);
  EXPECT_TRUE(s.metrics[0].required);
  EXPECT_FALSE(s.metrics[4].required);  // eval_* only where the program evaluates
}

TEST(CommandSpec, RequiredListOverridesEachMetricsOwnFlag) {
  CommandSpec s = command_spec_of(
      resolved(kBase +
               "  metrics:\n    - {name: a, regex: 'a(\\d)'}\n    - {name: b, regex: 'b(\\d)'}\n"
               "  success: {required: [b], exit_code: null, match: [done], fail: [Traceback]}\n"));
  EXPECT_FALSE(s.metrics[0].required);
  EXPECT_TRUE(s.metrics[1].required);
  EXPECT_FALSE(s.exit_code.has_value());
  EXPECT_EQ(s.match, std::vector<std::string>{"done"});
  EXPECT_EQ(s.fail, std::vector<std::string>{"Traceback"});
}

TEST(CommandSpec, BadInputNamesTheKeyTheLineAndTheFix) {
  EXPECT_EQ(error_text("benchmark: command\n"),
            "command.argv: is empty, but benchmark is command (give the program and its "
            "arguments, e.g. [python3, train.py, --lr, '{params.lr}'])");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: a, regex: 'x(', unit: s}\n"),
            "c.yaml:5:7: command.metrics[0].regex: 'x(' is not a regular expression: missing "
            "): x( (write RE2 syntax (docs/commands.md#regular-expressions))");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: a}\n"),
            "c.yaml:5:7: command.metrics[0]: has no regex (add regex: with a capture group "
            "around the number, e.g. 'loss ([0-9.]+)')");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: a, regx: b}\n"),
            "c.yaml:5:23: command.metrics[0]: unknown field 'regx' (did you mean 'regex'?) (a "
            "metric has name, unit, from, regex, group, reduce, pointer, optional, where, type)");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: a, regex: 'x', group: 2}\n"),
            "c.yaml:5:36: command.metrics[0].group: the regex has 0 capture groups, not 2");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: a, regex: '(x)', reduce: median}\n"),
            "c.yaml:5:39: command.metrics[0].reduce: the string \"median\" is not a reduction "
            "(use last, first, mean, min, max, sum, count or all)");
  // Text columns.
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: a, regex: '(x)', type: txt}\n"),
            "c.yaml:5:37: command.metrics[0].type: 'txt' is not a metric type (use number (the "
            "default) or text)");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: a, regex: '(x)', type: text, reduce: "
                               "mean}\n"),
            "c.yaml:5:51: command.metrics[0].reduce: a text metric keeps one value, so mean does "
            "not apply (use reduce: last (the default) or first)");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: a, from: json r.json}\n"),
            "c.yaml:5:7: command.metrics[0]: reads JSON but has no pointer (add pointer: /a/b "
            "(RFC 6901; * for every item))");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: 'a b', regex: x}\n"),
            "c.yaml:5:7: command.metrics[0].name: 'a b' is not a metric name (use letters, "
            "digits and _, not starting with a digit: it is a column)");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: status, regex: x}\n"),
            "c.yaml:5:7: command.metrics[0].name: 'status' is a column bench-extract fills "
            "itself (choose another name)");
  // An exit code no process can have was accepted and could never match.
  EXPECT_EQ(error_text(kBase + "  success: {exit_code: 256}\n"),
            "c.yaml:4:24: command.success.exit_code: must be in [0, 255], got integer 256");
  // Our own columns gave duplicate columns.
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: profile_trace, regex: x}\n"),
            "c.yaml:5:7: command.metrics[0].name: 'profile_trace' is a column bench-extract "
            "fills itself (choose another name)");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: repeats, regex: x}\n"),
            "c.yaml:5:7: command.metrics[0].name: 'repeats' is a column bench-extract fills "
            "itself (choose another name)");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: loss_std, regex: x}\n"),
            "c.yaml:5:7: command.metrics[0].name: 'loss_std' ends in _std, which bench-extract "
            "--group-repeats gives each metric's standard deviation (choose another name)");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: a, regex: x}\n    - {name: a, "
                               "regex: y}\n"),
            "c.yaml:6:7: command.metrics: two metrics are named 'a' (rename one of them)");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: abc, regex: x}\n"
                               "  success: {required: [abd]}\n"),
            "c.yaml:6:24: command.success.required: no metric is named 'abd' (did you mean "
            "'abc'?) (metrics: abc)");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: a, regex: '(x)', where: {k: 1}}\n"),
            "c.yaml:5:7: command.metrics[0].where: applies to JSON records only (add a pointer, "
            "or leave where out)");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: a, pointer: /v, where: [k]}\n"),
            "c.yaml:5:37: command.metrics[0].where: expected a mapping of member names to "
            "values, got a list of 1 item (e.g. where: {n_gen: 0})");
  EXPECT_EQ(error_text(kBase + "  metrics: [3]\n"),
            "c.yaml:4:13: command.metrics: expected a list of mappings, but an item is the "
            "integer 3");
  EXPECT_EQ(error_text(kBase + "  success: {fail: ['[']}\n"),
            "c.yaml:4:20: command.success.fail: '[' is not a regular expression: missing ]: [ "
            "(write RE2 syntax (docs/commands.md#regular-expressions))");
}

// RE2 has no lookaround or backreferences (what keeps it linear); a pattern written for
// ECMAScript or Python is told what to write instead.
TEST(CommandSpec, PatternsRe2RefusesSayWhatToWriteInstead) {
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: a, regex: 'loss (?=x)([0-9]+)'}\n"),
            "c.yaml:5:7: command.metrics[0].regex: 'loss (?=x)([0-9]+)' is not a regular "
            "expression: invalid perl operator: (?= (lookahead and lookbehind are not supported: "
            "match the context too and take the number from a capture group; RE2 syntax "
            "(docs/commands.md#regular-expressions))");
  EXPECT_EQ(error_text(kBase + "  success: {match: ['(a)\\1']}\n"),
            "c.yaml:4:21: command.success.match: '(a)\\1' is not a regular expression: invalid "
            "escape sequence: \\1 (backreferences (\\1) are not supported; RE2 syntax "
            "(docs/commands.md#regular-expressions))");
  EXPECT_EQ(error_text(kBase + "  metrics:\n    - {name: a, regex: '(?<n>[0-9]+)'}\n"),
            "c.yaml:5:7: command.metrics[0].regex: '(?<n>[0-9]+)' is not a regular "
            "expression: invalid perl operator: (?< (name a group (?P<name>...); RE2 syntax "
            "(docs/commands.md#regular-expressions))");
}

TEST(CommandSpec, UnknownPlaceholdersAreListedSorted) {
  EXPECT_EQ(error_text("benchmark: command\ncommand:\n  argv: [p, '{zeta}', '{params.lr}', "
                       "'{alpha}', '{out}']\nparams: {lr: 1}\n"),
            "c.yaml:3:13: command.argv: unknown placeholders: alpha, zeta (a placeholder is out, "
            "rank, local_rank, world_size, or a config key such as params.NAME or "
            "train.micro_batch (write {{ and }} for literal braces))");
  EXPECT_EQ(error_text(kBase + "  env: {A: '{x'}\n"),
            "c.yaml:4:12: command.env.A: '{' at position 0 has no matching '}' (write {{ for a "
            "literal brace)");
  // launch.setup runs before there are ranks: {rank} is not known there.
  EXPECT_THAT(error_text("launch:\n  setup: ['echo {rank}']\n"),
              HasSubstr("launch.setup: unknown placeholder: rank (a placeholder is out, or a "
                        "config key"));
}

// `{params.thread}` for `params.threads` gave llama-bench an empty argument and
// every point was ok. An entry a point does not set is an error naming the nearest one it sets;
// one set to '' or null on purpose reads as empty.
TEST(CommandSpec, APlaceholderForAnEntryThePointDoesNotSetIsRefused) {
  EXPECT_EQ(error_text("benchmark: command\ncommand:\n  argv: [llama-bench, -t, '{params.thread}']"
                       "\nparams: {threads: 2, model: m.gguf}\n"),
            "c.yaml:3:27: command.argv: placeholder {params.thread} is not set (did you mean "
            "'params.threads'?) (the point sets params.threads, params.model; set params.thread "
            "in base or an axis, or to '' where an empty value is meant)");
  EXPECT_THAT(error_text("launch:\n  setup: ['module load {params.module}']\n"),
              HasSubstr("launch.setup: placeholder {params.module} is not set (the point sets no "
                        "params entries;"));
  EXPECT_THAT(error_text(kBase + "  env: {A: '{launch.env.HOM}'}\nlaunch: {env: {HOME: /h}}\n"),
              HasSubstr("command.env.A: placeholder {launch.env.HOM} is not set (did you mean "
                        "'launch.env.HOME'?)"));
  EXPECT_THAT(
      error_text(kBase + "  metrics: [{name: x, from: '{params.dir}/m.txt', regex: 'x'}]\n"),
      HasSubstr("command.metrics[0].from: placeholder {params.dir} is not set"));
  EXPECT_NO_THROW(
      resolved("benchmark: command\ncommand:\n  argv: [p, '{params.a}', '{params.b}', "
               "'{{literal}}']\nparams: {a: '', b: null}\n"));
}

TEST(Params, FreeNamesScalarsAndListsHashedOnlyWhenSet) {
  Value a = resolved("params: {peft_method: lora, r: 8, alpha: 0.5, on: true, mods: [q, v]}\n");
  EXPECT_EQ(config_at(a, "params.r"), Value::integer(8));
  EXPECT_EQ(config_at(a, "params.mods").items().size(), 2u);
  // An empty params is every earlier config: its hash does not change.
  EXPECT_EQ(config_hash(resolved("model.preset: gpt2\n")),
            config_hash(resolved("model.preset: gpt2\nparams: {}\n")));
  EXPECT_NE(config_hash(resolved("params: {x: 1}\n")), config_hash(resolved("params: {x: 2}\n")));
  EXPECT_NE(config_hash(resolved("params: {x: 1}\n")), config_hash(resolved("params: {x: '1'}\n")));
  EXPECT_EQ(error_text("params: {'a b': 1}\n"),
            "c.yaml:1:17: params: 'a b' is not a name for params (use letters, digits, _ and -, "
            "e.g. params.peft_method)");
  EXPECT_EQ(error_text("params: {x: {y: 1}}\n"),
            "c.yaml:1:13: params.x: expected a scalar or a list of scalars, got a mapping");
  EXPECT_EQ(error_text("params: 3\n"),
            "c.yaml:1:9: params: expected mapping of names to scalars or lists, got the integer 3");
}

TEST(CommandSpec, OnlyTheCommandSectionHashesForCommandPoints) {
  // The model a command never reads does not change its hash; its argv does.
  std::string cmd = kBase + "params: {x: 1}\n";
  EXPECT_EQ(config_hash(resolved(cmd)), config_hash(resolved(cmd + "model.preset: gpt2-tiny\n")));
  EXPECT_NE(config_hash(resolved(cmd)),
            config_hash(resolved("benchmark: command\ncommand:\n  argv: [prog, --y]\n"
                                 "params: {x: 1}\n")));
  // A training point's hash ignores the command section.
  EXPECT_EQ(config_hash(resolved("model.preset: gpt2\n")),
            config_hash(resolved("model.preset: gpt2\ncommand: {argv: [x]}\n")));
}

}  // namespace
}  // namespace sweepbench
