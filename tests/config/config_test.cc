#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>

#include "config/json_text.h"
#include "config/yaml_io.h"
#include "support/expect_error.h"
#include "support/temp_dir.h"

namespace sweepbench {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

Value partial(const std::string& text) {
  return normalize_partial_config(parse_yaml(text, "c.yaml"));
}
Value resolved(const std::string& text) { return resolve_config(partial(text)); }
std::string hash_of(const std::string& text) { return config_hash(resolved(text)); }
std::string error_text(const std::string& text) {
  return error_of([&] { resolved(text); }).what();
}

TEST(PartialConfig, NestedAndDottedKeysMeanTheSame) {
  EXPECT_EQ(partial("train:\n  lr: 0.1\n  steps: 5\n"), partial("train.lr: 0.1\ntrain.steps: 5\n"));
  EXPECT_EQ(partial("train:\n  lr: 0.1\n"), partial("train: {lr: 0.1}\n"));
  EXPECT_EQ(partial_config_keys(partial("model.preset: gpt2\ntrain: {lr: 1, steps: 3}\n")),
            (std::vector<std::string>{"model.preset", "train.lr", "train.steps"}));
}

TEST(PartialConfig, RejectsUnknownKeysWithASuggestion) {
  EXPECT_EQ(error_text("train:\n  microbatch: 8\n"),
            "c.yaml:2:3: unknown key 'train.microbatch' (did you mean 'train.micro_batch'?)");
  EXPECT_EQ(error_text("trian.lr: 1\n"),
            "c.yaml:1:1: unknown key 'trian.lr' (did you mean 'train.lr'?)");
}

TEST(PartialConfig, RejectsWrongTypesWithTheirPosition) {
  EXPECT_EQ(
      error_text("train:\n  micro_batch: eight\n"),
      "c.yaml:2:16: train.micro_batch: expected integer in [1, 1048576], got the string \"eight\"");
  EXPECT_EQ(error_text("train: 3\n"),
            "c.yaml:1:8: train: is a section; expected a mapping of its keys, got the integer 3");
  EXPECT_THAT(error_text("train.lr: 1\ntrain:\n  lr: 2\n"), HasSubstr("train.lr: is set twice"));
  EXPECT_THAT(error_text("- a\n- b\n"), HasSubstr("expected a mapping of keys"));
}

TEST(PartialConfig, MapKeysTakeAnyNames) {
  Value p = partial("launch:\n  env:\n    OMP_NUM_THREADS: 4\n    NCCL_DEBUG: INFO\n");
  EXPECT_EQ(p.find_path("launch.env")->find("OMP_NUM_THREADS")->as_string(), "4");
  Value dotted = partial("launch.env.OMP_NUM_THREADS: 4\n");
  EXPECT_EQ(dotted.find_path("launch.env")->find("OMP_NUM_THREADS")->as_string(), "4");
}

// A variable setenv() cannot set, or a NUL that ends a string wherever it is passed,
// is refused where it is written instead of being lost on the way.
TEST(PartialConfig, EnvironmentNamesAndNulAreChecked) {
  EXPECT_EQ(error_text("launch:\n  env: {\"A=B\": x}\n"),
            "c.yaml:2:16: launch.env: 'A=B' is not an environment variable name (use letters, "
            "digits and _, not starting with a digit, e.g. OMP_NUM_THREADS)");
  for (const char* bad : {"\"1X\"", "\"A B\"", "\"A-B\"", "\"A\\0\""}) {
    EXPECT_THAT(error_text(std::string("container.env: {") + bad + ": x}\n"),
                HasSubstr("is not an environment variable name"))
        << bad;
  }
  EXPECT_THAT(error_text("container.env: {\"A\\0\": x}\n"), HasSubstr("'A\\x00'"));
  for (const char* bad : {"hardware.name: \"a\\0b\"\n", "launch.env: {A: \"x\\0\"}\n",
                          "container.extra_args: [\"--x\\0\"]\n", "model.preset: \"gpt2\\0\"\n"}) {
    std::string text = error_text(bad);
    EXPECT_THAT(text, HasSubstr("contains a NUL character")) << bad;
  }
  EXPECT_THAT(error_text("hardware.name: \"a\\0b\"\n"),
              HasSubstr("hardware.name: contains a NUL character (\\0) (no program can be given "
                        "it; remove it)"));
  EXPECT_NO_THROW(resolved("launch.env: {_X1: a, lower_case: b}\n"));
}

TEST(Overrides, AreTypedLikeYaml) {
  EXPECT_TRUE(parse_override("train.lr=1e-3").partial.find_path("train.lr")->is_float());
  EXPECT_EQ(parse_override("train.micro_batch=16").partial.find_path("train.micro_batch")->as_int(),
            16);
  EXPECT_EQ(parse_override("train.dtype=bf16").partial.find_path("train.dtype")->as_string(),
            "bf16");
  Value binds =
      *parse_override("container.binds=[/a:/b, /c:/d:ro]").partial.find_path("container.binds");
  ASSERT_EQ(binds.items().size(), 2u);
  EXPECT_EQ(binds.items()[1].as_string(), "/c:/d:ro");
  EXPECT_TRUE(parse_override("data.path=").partial.find_path("data.path")->is_null());
  EXPECT_EQ(
      parse_override("container.image=\"24.02\"").partial.find_path("container.image")->as_string(),
      "24.02");
  EXPECT_EQ(parse_override("launch.env.NCCL_DEBUG=INFO").key, "launch.env.NCCL_DEBUG");
}

TEST(Overrides, ExplainMistakes) {
  EXPECT_EQ(std::string(error_of([] { parse_override("train.micro_batch=abc"); }).what()),
            "--set train.micro_batch=abc: train.micro_batch: expected integer in [1, 1048576], got "
            "the string \"abc\"");
  EXPECT_EQ(std::string(error_of([] { parse_override("train.microbatch=8"); }).what()),
            "--set train.microbatch=8: unknown key 'train.microbatch' (did you mean "
            "'train.micro_batch'?)");
  EXPECT_THAT(error_of([] { parse_override("launch.env.A\x93=2"); }).what(),
              HasSubstr("not valid UTF-8"));
  EXPECT_EQ(std::string(error_of([] { parse_override("train.lr"); }).what()),
            "--set train.lr: expected KEY=VALUE (for example --set train.micro_batch=8)");
}

TEST(Resolve, FillsDerivedKeysFromThePreset) {
  Value r = resolved("model.preset: llama2-70b\n");
  EXPECT_EQ(config_at(r, "model.arch").as_string(), "llama");
  EXPECT_EQ(config_at(r, "model.n_layer").as_int(), 80);
  EXPECT_EQ(config_at(r, "model.n_kv_head").as_int(), 8);
  EXPECT_EQ(config_at(r, "data.seq_len").as_int(), 4096);
  EXPECT_EQ(config_at(r, "eval.micro_batch").as_int(), 8);
  // An explicit dimension wins; n_head without n_kv_head keeps the preset's grouping ratio.
  Value small = resolved("model: {preset: llama2-70b, n_head: 16, n_embd: 1024}\n");
  EXPECT_EQ(config_at(small, "model.n_kv_head").as_int(), 2);
  Value mha = resolved("model: {preset: gpt2, n_head: 8}\n");
  EXPECT_EQ(config_at(mha, "model.n_kv_head").as_int(), 8);
  EXPECT_EQ(model_shape_of(resolved("model.preset: gpt2\n")).n_embd, 768);
}

// A width override keeps the MLP's ratio, not the preset's absolute width.
TEST(Resolve, TheMlpWidthFollowsAnOverriddenWidth) {
  auto ffn = [](const std::string& text) {
    return config_at(resolved(text), "model.ffn_dim").as_int();
  };
  EXPECT_EQ(ffn("model: {preset: gpt2}\n"), 3072);
  EXPECT_EQ(ffn("model: {preset: gpt2, n_embd: 128, n_head: 4}\n"), 512);  // HF: n_inner = 4 d
  EXPECT_EQ(ffn("model: {preset: gpt2, n_embd: 768}\n"), 3072);
  EXPECT_EQ(ffn("model: {preset: gpt2, n_embd: 128, n_head: 4, ffn_dim: 100}\n"), 100);
  EXPECT_EQ(ffn("model: {preset: llama2-7b}\n"), 11008);
  EXPECT_EQ(ffn("model: {preset: llama-tiny}\n"), 176);  // the preset's own, kept
  EXPECT_EQ(ffn("model: {preset: llama2-13b, n_embd: 4096, n_head: 32}\n"), 11008);  // 8/3 d, 256s
  EXPECT_EQ(ffn("model: {preset: llama-tiny, n_embd: 128}\n"), 512);
  EXPECT_EQ(ffn("model: {preset: gpt2-tiny, arch: llama}\n"), 256);
  // The parameter count follows: 2.25M parameters were a 24x MLP; 4x is what users expect.
  EXPECT_EQ(ffn_dim_for("gpt2", 1600), 6400);    // GPT-2 XL's own ratio
  EXPECT_EQ(ffn_dim_for("llama", 5120), 13824);  // Llama 2 13B's
  // A config written out by plan keeps following: --set n_embd on a written gpt2 config.
  testing::TempDir dir;
  std::string path =
      dir.write("config.yaml", point_config_file_text(resolved("model.preset: gpt2\n")));
  Value loaded = load_point_config(
      path, {parse_override("model.n_embd=256"), parse_override("model.n_head=4")});
  EXPECT_EQ(config_at(loaded, "model.ffn_dim").as_int(), 1024);
}

TEST(Resolve, ChecksCrossKeyRules) {
  EXPECT_EQ(error_text("model: {preset: gpt2, n_head: 7}\n"),
            "c.yaml:1:31: model.n_head: 7 does not divide model.n_embd (768)");
  EXPECT_EQ(error_text("model.preset: gpt2\ndata.seq_len: 2048\n"),
            "c.yaml:2:15: data.seq_len: 2048 exceeds model.block_size (1024) (lower data.seq_len "
            "or raise model.block_size)");
  EXPECT_EQ(error_text("train: {steps: 5, warmup_steps: 5}\n"),
            "c.yaml:1:33: train.warmup_steps: 5 leaves no measured step of train.steps (5) (make "
            "train.warmup_steps less than train.steps)");
  EXPECT_EQ(error_text("train: {loss_chunk_rows: 64}\n"),
            "c.yaml:1:26: train.loss_chunk_rows: 64 without train.fused_loss: the whole logits "
            "are made, not chunks (set train.fused_loss: true, or leave train.loss_chunk_rows at "
            "0)");
  EXPECT_EQ(config_at(resolved("train: {loss_chunk_rows: 64, fused_loss: true}\n"),
                      "train.loss_chunk_rows")
                .as_int(),
            64);
  EXPECT_THAT(error_text("launch: {ranks: 3, nodes: 2}\n"),
              HasSubstr("launch.ranks (3) is not a multiple of launch.nodes (2)"));
  EXPECT_THAT(error_text("data.source: tokens\n"),
              HasSubstr("data.source 'tokens' needs a data.path"));
  EXPECT_THAT(error_text("container.image: x.sif\n"),
              HasSubstr("container.image is set but container.runtime is none"));
  EXPECT_THAT(error_text("container.runtime: apptainer\n"), HasSubstr("needs a container.image"));
  EXPECT_THAT(error_text("model: {preset: gpt2-tiny, n_kv_head: 3}\n"),
              HasSubstr("model.n_kv_head: 3 does not divide model.n_head (4)"));
  EXPECT_THAT(error_text("model: {preset: llama-tiny, n_embd: 12, n_head: 4, n_kv_head: 4}\n"),
              HasSubstr("rotary embeddings need an even head size"));
  EXPECT_THAT(
      error_text("model: {preset: gpt2-tiny, vocab_size: 100}\ndata: {source: text, path: x}\n"),
      HasSubstr("byte-level text needs at least 256 tokens"));
}

TEST(ConfigHash, EqualConfigsHashEqualHoweverWritten) {
  std::string h = hash_of("train:\n  lr: 0.001\n  micro_batch: 8\n");
  EXPECT_EQ(hash_of("train.micro_batch: 8\ntrain.lr: 1e-3\n"), h);
  EXPECT_EQ(hash_of("train: {lr: !!float 1.0e-3, micro_batch: 0x8}\n"), h);
  EXPECT_EQ(hash_of("train: {lr: 0.0010, micro_batch: 8, dtype: fp32}\n"),
            h);  // fp32 is the default
  EXPECT_NE(hash_of("train: {lr: 0.002, micro_batch: 8}\n"), h);
  // Writing down what the preset implies changes nothing.
  EXPECT_EQ(
      hash_of(
          "model: {preset: gpt2, n_layer: 12, n_head: 12}\ntrain: {lr: 0.001, micro_batch: 8}\n"),
      h);
  // Integers written for float keys are floats.
  EXPECT_EQ(hash_of("train.lr: 1\n"), hash_of("train.lr: 1.0\n"));
  // Map order does not matter.
  EXPECT_EQ(hash_of("launch.env: {A: '1', B: '2'}\n"), hash_of("launch.env: {B: 2, A: 1}\n"));
  EXPECT_EQ(h.size(), 64u);
}

TEST(ConfigHash, LeavesOutSchedulingOnlyKeys) {
  std::string h = hash_of("train.steps: 20\n");
  EXPECT_EQ(hash_of("train.steps: 20\nslurm: {time: '02:00:00', account: proj, qos: high, "
                    "max_requeue: 3, mail_user: me@x}\nhardware.price_per_hour: 2.5\n"),
            h);
  EXPECT_NE(hash_of("train.steps: 20\nslurm.partition: gpu\n"), h);
  std::string canonical = canonical_config_text(resolved("slurm.time: 10\n"));
  EXPECT_THAT(canonical, ::testing::Not(HasSubstr("  time:")));
  EXPECT_THAT(canonical, HasSubstr("partition: null"));
}

TEST(ConfigHash, KeysAndSectionsAddedLaterChangeItOnlyAwayFromTheirDefaults) {
  std::string h = hash_of("train.steps: 20\n");
  // train.zero_stage, train.bucket_mb, train.peft and the lora section came later.
  EXPECT_EQ(hash_of("train.steps: 20\ntrain.peft: none\nlora.r: 8\ntrain.bucket_mb: 25\n"), h);
  EXPECT_THAT(canonical_config_text(resolved("")), ::testing::Not(HasSubstr("lora")));
  std::string lora = hash_of("train.steps: 20\ntrain.peft: lora\n");
  EXPECT_NE(lora, h);
  EXPECT_NE(hash_of("train.steps: 20\ntrain.peft: lora\nlora.r: 16\n"), lora);
  EXPECT_NE(hash_of("train.steps: 20\ntrain.bucket_mb: 5\n"), h);
}

TEST(ConfigHash, TheBenchmarkKeyAtItsDefaultKeepsEarlierHashes) {
  // `benchmark` came after results existed; every earlier config meant `train`.
  std::string h = hash_of("train.steps: 20\n");
  EXPECT_EQ(hash_of("benchmark: train\ntrain.steps: 20\n"), h);
  // What bench-sweep plan gave this config before the key existed (commit 9a68551).
  EXPECT_EQ(h, "cfd915c9851338cc28528153225f1866166842859cf54f48b90c4ab67879206c");
  EXPECT_THAT(canonical_config_text(resolved("benchmark: train\n")),
              ::testing::Not(HasSubstr("benchmark")));
  // The config file keeps it, so a reader sees what ran.
  EXPECT_THAT(point_config_file_text(resolved("")), HasSubstr("benchmark: \"train\""));
  // Only registered workloads: the error lists them.
  EXPECT_THROW(resolved("benchmark: serve\n"), Error);
}

TEST(ConfigHash, EachWorkloadHashesOnlyTheSectionsItReads) {
  // The infer section (added with bench-infer) leaves training hashes as they were.
  std::string train = hash_of("train.steps: 20\n");
  EXPECT_EQ(hash_of("train.steps: 20\ninfer: {batch_size: 8, kv_cache: none}\n"), train);
  EXPECT_THAT(canonical_config_text(resolved("")), ::testing::Not(HasSubstr("infer")));
  // An inference point hashes its infer section and not training's.
  std::string infer = hash_of("benchmark: infer\n");
  EXPECT_NE(hash_of("benchmark: infer\ninfer.batch_size: 8\n"), infer);
  EXPECT_EQ(hash_of("benchmark: infer\ntrain: {steps: 70, lr: 0.1}\neval.steps: 0\n"), infer);
  std::string text = canonical_config_text(resolved("benchmark: infer\n"));
  EXPECT_THAT(text, HasSubstr("kv_cache"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("micro_batch")));
  // infer.cuda_graph came later: at its default an inference point keeps its hash.
  EXPECT_EQ(hash_of("benchmark: infer\ninfer.cuda_graph: true\n"), infer);
  EXPECT_THAT(text, ::testing::Not(HasSubstr("cuda_graph")));
  EXPECT_NE(hash_of("benchmark: infer\ninfer.cuda_graph: false\n"), infer);
}

// bench-sweep plan keeps one writer for all its points, each line's text beside its value: a
// config after others gets the text it gets alone, whichever keys, workload or later keys at
// their defaults changed in between.
TEST(ConfigHash, AWriterKeptBetweenConfigsGivesEachItsOwnText) {
  const char* configs[] = {"train.steps: 20\n",
                           "train.steps: 21\n",
                           "benchmark: infer\n",
                           "benchmark: infer\ninfer.cuda_graph: false\n",
                           "train.peft: lora\n",
                           "",
                           "train.peft: lora\nlora.r: 16\n",
                           "train.peft: none\nlora.r: 16\n",
                           "params: {a: 1}\n",
                           "params: {a: 2, b: x}\n",
                           "params: {a: 2, b: x}\nslurm.time: 10\n",
                           "launch.env: {A: '1'}\ntrain.bucket_mb: 5\n",
                           "train.steps: 20\n"};
  CanonicalConfigText writer;
  for (const char* text : configs) {
    Value config = resolved(text);
    EXPECT_EQ(writer.text(config), canonical_config_text(config)) << text;
    EXPECT_EQ(writer.hash(config), config_hash(config)) << text;
  }
  EXPECT_EQ(writer.hash(resolved("train.steps: 20\n")),
            "cfd915c9851338cc28528153225f1866166842859cf54f48b90c4ab67879206c");
}

// bench-sweep plan resolves every point into one tree with one ConfigResolver, which copies back
// only what the point before changed: each config is the one resolve_config gives, marks and the
// order of a map's entries included, after any other (a derived key filled, a map grown, a
// config that failed its rules half-way, a tree of another layout).
TEST(ConfigResolver, EachConfigIsTheOneResolveConfigGives) {
  const char* configs[] = {"model: {preset: gpt2-tiny}\ntrain.steps: 20\n",
                           "model: {preset: gpt2-tiny, n_embd: 128}\n",
                           "model: {preset: gpt2-tiny}\ntrain.steps: 21\n",
                           "params: {a: 1, b: 2}\n",
                           "params: {b: 3}\n",
                           "train: {steps: 5, warmup_steps: 10}\n",  // fails its rules
                           "benchmark: infer\ninfer.input_tokens: 64\n",
                           "launch.env: {A: '1'}\neval.micro_batch: 3\n",
                           ""};
  ConfigResolver resolver;
  Value full;
  for (const char* text : configs) {
    Value p = partial(text);
    std::optional<Value> expected;
    try {
      expected = resolve_config(p);
    } catch (const Error&) {
    }
    if (!expected) {
      EXPECT_THROW(resolver.resolve(p, full), Error) << text;
      continue;
    }
    resolver.resolve(p, full);
    EXPECT_EQ(emit_json(full, 2), emit_json(*expected, 2)) << text;  // the order of entries too
    EXPECT_EQ(full.find_path("train.steps")->mark().str(),
              expected->find_path("train.steps")->mark().str())
        << text;
  }
  Value other = parse_yaml("a: 1\n", "t.yaml");
  resolver.resolve(partial("train.steps: 30\n"), other);
  EXPECT_EQ(other, resolved("train.steps: 30\n"));
}

// bench-sweep plan --format json writes every point's config through one JsonMapText: each gets
// what emit_json gives it alone, whatever changed in between (a key's value, a map's entries,
// their order, a map emptied), and whatever the level it stands at.
TEST(JsonMapText, AWriterKeptBetweenMapsGivesEachItsOwnText) {
  const char* configs[] = {"train.steps: 20\n",
                           "train.steps: 21\n",
                           "benchmark: infer\n",
                           "params: {a: 1}\n",
                           "params: {a: 2, b: x}\n",
                           "params: {b: x, a: 2}\n",
                           "launch.env: {A: '1'}\ntrain.lr: 0.5\n",
                           "command.argv: [a, b]\n",
                           "",
                           "train.steps: 20\n"};
  for (int level : {0, 3}) {
    JsonMapText writer(2, level);
    for (const char* text : configs) {
      Value config = resolved(text);
      std::string out = "x";
      writer.append(config, out);
      EXPECT_EQ(out, "x" + emit_json(config, 2, false, level)) << text;
    }
    // Maps of another layout: not a config, a map key turned into a section, an empty map.
    for (const char* text : {"a: 1\nb: {c: 2}\n", "a: 1\nb: {c: 2, d: 3}\n",
                             "a: {x: 1}\nb: {c: 2, d: 3}\n", "a: {}\nb: 1\n", "{}"}) {
      Value map = parse_yaml(text, "t.yaml");
      std::string out;
      writer.append(map, out);
      EXPECT_EQ(out, emit_json(map, 2, false, level)) << text;
    }
  }
}

// The size check blamed train.micro_batch (at 1) for a vocabulary or a
// sequence too large for any machine; the key it names is the one to lower.
TEST(TensorSizes, NameTheKeyToLower) {
  auto error = [](const char* text) { return error_of([&] { resolved(text); }); };
  Error vocab = error("model: {vocab_size: 16777216, block_size: 1048576}\ntrain.micro_batch: 1\n");
  EXPECT_EQ(vocab.key(), "model.vocab_size");
  EXPECT_THAT(vocab.message(), HasSubstr("16777216 is too large: even at train.micro_batch 1, the "
                                         "logits"));
  Error seq = error("model: {block_size: 4194304}\ntrain.micro_batch: 1\n");
  EXPECT_EQ(seq.key(), "data.seq_len");
  EXPECT_THAT(seq.message(), HasSubstr("the attention scores"));
  Error batch = error("model: {block_size: 1048576}\ntrain.micro_batch: 1024\n");
  EXPECT_EQ(batch.key(), "train.micro_batch");
  EXPECT_THAT(batch.message(), HasSubstr("1024 is too large: the "));
}

TEST(InferRules, TheSequenceMustFitAndChoicesMustCombine) {
  // gpt2-tiny: block_size 128.
  EXPECT_NO_THROW(
      resolved("benchmark: infer\nmodel.preset: gpt2-tiny\n"
               "infer: {input_tokens: 100, output_tokens: 28}\n"));
  auto error = [](const char* text) { return error_of([&] { resolved(text); }); };
  Error long_output = error(
      "benchmark: infer\nmodel.preset: gpt2-tiny\ninfer: {input_tokens: 100, output_tokens: 29}\n");
  EXPECT_EQ(long_output.key(), "infer.output_tokens");
  EXPECT_THAT(long_output.message(), HasSubstr("= 129 exceeds model.block_size (128)"));
  Error beams = error("benchmark: infer\ninfer: {num_beams: 4, do_sample: true}\n");
  EXPECT_EQ(beams.key(), "infer.num_beams");
  EXPECT_THAT(beams.message(), HasSubstr("infer.do_sample is true"));
  // batch_size x num_beams past int range crashed bench-infer. Each has its
  // range, and what they make together is judged by the memory it would need.
  Error beyond = error("benchmark: infer\ninfer.batch_size: 100000000000\n");
  EXPECT_EQ(beyond.key(), "infer.batch_size");
  EXPECT_EQ(beyond.message(), "must be in [1, 1048576], got integer 100000000000");
  Error huge = error("benchmark: infer\ninfer: {batch_size: 1048576, num_beams: 1024}\n");
  EXPECT_EQ(huge.key(), "infer.batch_size");
  EXPECT_THAT(huge.message(), HasSubstr("more than any machine holds"));
  // The rules are bench-infer's: a training point with the same section is not checked.
  EXPECT_NO_THROW(
      resolved("model.preset: gpt2-tiny\ninfer: {input_tokens: 100, output_tokens: 29}\n"));
}

TEST(PointConfigFile, RoundTripsWithTheSameHash) {
  testing::TempDir dir;
  Value r = resolved("model.preset: llama-tiny\ntrain: {lr: 2e-4, dtype: bf16}\nslurm.time: 30\n");
  std::string path = dir.write("config.yaml", point_config_file_text(r));
  Value loaded = load_point_config(path, {});
  EXPECT_EQ(loaded, r);
  EXPECT_EQ(config_hash(loaded), config_hash(r));
  std::string text = testing::read_text(path);
  EXPECT_THAT(text, HasSubstr("config_hash: " + config_hash(r)));
  Value overridden = load_point_config(path, {parse_override("train.steps=99")});
  EXPECT_EQ(config_at(overridden, "train.steps").as_int(), 99);
}

TEST(PointConfigFile, DerivedValuesFollowTheirSourceUnderOverrides) {
  testing::TempDir dir;
  std::string path = dir.write(
      "config.yaml", point_config_file_text(resolved(
                         "model: {preset: gpt2-tiny, n_layer: 3}\ntrain.micro_batch: 4\n")));
  Value llama = load_point_config(path, {parse_override("model.preset=llama-tiny")});
  EXPECT_EQ(config_at(llama, "model.arch").as_string(), "llama");
  EXPECT_EQ(config_at(llama, "model.n_kv_head").as_int(), 2);
  EXPECT_EQ(config_at(llama, "model.ffn_dim").as_int(), 176);
  EXPECT_EQ(config_at(llama, "model.n_layer").as_int(), 3);  // explicit: it stays
  Value bigger = load_point_config(path, {parse_override("train.micro_batch=16")});
  EXPECT_EQ(config_at(bigger, "eval.micro_batch").as_int(), 16);
  Value seq = load_point_config(path, {parse_override("model.block_size=64")});
  EXPECT_EQ(config_at(seq, "data.seq_len").as_int(), 64);
  // Without overrides the file is taken as it is.
  EXPECT_EQ(
      config_hash(load_point_config(path, {})),
      config_hash(resolved("model: {preset: gpt2-tiny, n_layer: 3}\ntrain.micro_batch: 4\n")));
}

}  // namespace
}  // namespace sweepbench
