// Generates with bench-infer's generator on one CPU rank and writes what a reference
// implementation needs to redo it (tests/reference/check_generation.py):
//   DIR/manifest.json  options, and the arrays below
//   DIR/<name>.bin     raw little-endian arrays: the parameters (float32), the prompts, and the
//                      tokens generated greedily and by sampling (int64), the prompts' logits
//                      (float32, batch x input x vocab)
// Usage: infer_reference_dump PRESET DIR
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "config/model_shapes.h"
#include "config/value.h"
#include "config/yaml_io.h"
#include "infer/generator.h"
#include "support/raw_dump.h"

using namespace sweepbench;
using sweepbench::testing::shape_value;
using sweepbench::testing::write_raw;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: infer_reference_dump PRESET DIR\n");
    return 2;
  }
  const std::string dir = argv[2];
  std::filesystem::create_directories(dir);
  GeneratorOptions o;
  o.shape = find_model_preset(argv[1])->shape;
  o.preset = argv[1];
  o.batch = 2;
  o.input_tokens = 10;
  o.output_tokens = 12;
  o.seed = 5;
  o.device = Device::kCpu;
  o.threads = 1;
  o.temperature = 0.9;
  o.top_k = 100;
  o.top_p = 0.95;

  Value arrays = Value::map();
  auto add = [&](const std::string& name, const void* data, size_t bytes, const char* dtype,
                 const std::vector<std::int64_t>& shape) {
    write_raw(dir + "/" + name + ".bin", data, bytes);
    Value entry = Value::map();
    entry.set("file", Value::string(name + ".bin"));
    entry.set("shape", shape_value(shape));
    entry.set("dtype", Value::string(dtype));
    arrays.set(name, entry);
  };

  std::vector<std::int64_t> prompts;
  for (std::int64_t i = 0; i < o.batch * o.input_tokens; ++i) {
    prompts.push_back((i * 131 + 7) % o.shape.vocab_size);
  }
  add("prompts", prompts.data(), prompts.size() * 8, "int64", {o.batch, o.input_tokens});
  for (bool sample : {false, true}) {
    o.do_sample = sample;
    std::unique_ptr<Generator> gen = make_generator(o);
    if (!sample) {
      for (const NamedArray& a : gen->parameter_values()) {
        add("param." + a.name, a.values.data(), a.values.size() * 4, "float32", a.shape);
      }
      std::vector<float> logits = gen->logits(prompts);
      add("logits", logits.data(), logits.size() * 4, "float32",
          {o.batch, o.input_tokens, o.shape.vocab_size});
    }
    Generation g = gen->generate(prompts);
    if (g.status.outcome != Outcome::kOk) {
      std::fprintf(stderr, "infer_reference_dump: %s\n", g.status.reason.c_str());
      return 1;
    }
    add(sample ? "sampled" : "greedy", g.tokens.data(), g.tokens.size() * 8, "int64",
        {o.batch, o.output_tokens});
  }

  Value opts = Value::map();
  opts.set("arch", Value::string(o.shape.arch));
  opts.set("n_layer", Value::integer(o.shape.n_layer));
  opts.set("n_embd", Value::integer(o.shape.n_embd));
  opts.set("n_head", Value::integer(o.shape.n_head));
  opts.set("n_kv_head", Value::integer(o.shape.n_kv_head));
  opts.set("ffn_dim", Value::integer(o.shape.ffn_dim));
  opts.set("vocab_size", Value::integer(o.shape.vocab_size));
  opts.set("block_size", Value::integer(o.shape.block_size));
  opts.set("output_tokens", Value::integer(o.output_tokens));
  opts.set("seed", Value::integer(static_cast<std::int64_t>(o.seed)));
  opts.set("temperature", Value::real(o.temperature));
  opts.set("top_k", Value::integer(o.top_k));
  opts.set("top_p", Value::real(o.top_p));
  opts.set("rope_theta", Value::real(10000.0));
  Value manifest = Value::map();
  manifest.set("options", opts);
  manifest.set("arrays", arrays);
  std::ofstream(dir + "/manifest.json") << emit_json(manifest, 2) << "\n";
  return 0;
}
