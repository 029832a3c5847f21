// Runs two real training steps of a tiny model through the Trainer on one CPU rank and writes
// what a reference implementation needs to redo them (tests/reference/check_training_step.py):
//   DIR/manifest.json  options, per-step loss and grad norm, and the arrays below
//   DIR/<name>.bin     raw little-endian arrays: initial and final parameters (float32),
//                      each step's input and target tokens (int64)
// Usage: reference_dump PRESET DIR
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "config/model_shapes.h"
#include "config/value.h"
#include "config/yaml_io.h"
#include "run/collectives.h"
#include "run/data.h"
#include "support/raw_dump.h"
#include "train/trainer.h"

using namespace sweepbench;
using sweepbench::testing::shape_value;
using sweepbench::testing::write_raw;

namespace {

void dump_parameters(Trainer& trainer, const std::string& dir, const std::string& prefix,
                     Value& arrays) {
  for (const NamedArray& a : trainer.parameter_values()) {
    std::string file = prefix + "." + a.name + ".bin";
    write_raw(dir + "/" + file, a.values.data(), a.values.size() * sizeof(float));
    Value entry = Value::map();
    entry.set("file", Value::string(file));
    entry.set("shape", shape_value(a.shape));
    entry.set("dtype", Value::string("float32"));
    arrays.set(prefix + "." + a.name, entry);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || (std::string(argv[3]) != "ops" && std::string(argv[3]) != "kernels")) {
    std::fprintf(stderr, "usage: reference_dump PRESET DIR ops|kernels\n");
    return 2;
  }
  std::string dir = argv[2];
  std::filesystem::create_directories(dir);
  TrainerOptions o;
  o.shape = find_model_preset(argv[1])->shape;
  o.preset = argv[1];
  o.seq_len = 16;
  o.train.grad_accum = 2;
  o.train.lr = 1e-3;
  o.train.weight_decay = 0.1;
  o.train.grad_clip = 0.5;  // low enough to be active
  o.train.seed = 5;
  o.device = Device::kCpu;
  o.threads = 1;
  // Logits, then cross_entropy, as the PyTorch reference computes them: weights must agree to
  // 1e-6 after two AdamW steps, which turn rounding in small gradients into visible differences.
  // The chunked loss (train.fused_loss) is checked against this path in model_test.cc.
  o.train.fused_loss = false;
  // ops: libtorch's ops only; kernels: train.cpu_kernels (the default), whose exponentials and
  // sums round differently from libtorch's, so the check allows 1e-5 there.
  o.train.cpu_kernels = std::string(argv[3]) == "kernels";
  SingleProcess comm;
  std::unique_ptr<Trainer> trainer = make_trainer(o, comm);

  DataOptions d;
  d.seq_len = o.seq_len;
  d.vocab_size = o.shape.vocab_size;
  d.seed = 11;
  std::unique_ptr<TokenSource> data = open_token_source(d, 0, 1);

  Value manifest = Value::map();
  Value arrays = Value::map();
  dump_parameters(*trainer, dir, "initial", arrays);
  Value steps = Value::list();
  for (int step = 0; step < 2; ++step) {
    std::vector<Batch> batches = {data->next_train(3), data->next_train(3)};
    Value batch_files = Value::list();
    for (size_t i = 0; i < batches.size(); ++i) {
      for (const char* which : {"inputs", "targets"}) {
        const std::vector<std::int64_t>& ids =
            std::string(which) == "inputs" ? batches[i].inputs : batches[i].targets;
        std::string file = "step" + std::to_string(step) + "." + which + std::to_string(i) + ".bin";
        write_raw(dir + "/" + file, ids.data(), ids.size() * sizeof(std::int64_t));
      }
      Value b = Value::map();
      b.set("inputs",
            Value::string("step" + std::to_string(step) + ".inputs" + std::to_string(i) + ".bin"));
      b.set("targets",
            Value::string("step" + std::to_string(step) + ".targets" + std::to_string(i) + ".bin"));
      b.set("shape", shape_value({batches[i].batch, batches[i].seq}));
      batch_files.items().push_back(b);
    }
    if (trainer->forward_backward(batches).outcome != Outcome::kOk ||
        trainer->update(o.train.lr).outcome != Outcome::kOk) {
      std::fprintf(stderr, "reference_dump: the step failed\n");
      return 1;
    }
    StepTiming t = trainer->finish_step();
    Value s = Value::map();
    s.set("loss", Value::real(t.loss));
    s.set("grad_norm", Value::real(t.grad_norm));
    s.set("micro_batches", batch_files);
    steps.items().push_back(s);
  }
  dump_parameters(*trainer, dir, "final", arrays);

  Value opts = Value::map();
  opts.set("preset", Value::string(o.preset));
  opts.set("arch", Value::string(o.shape.arch));
  opts.set("n_layer", Value::integer(o.shape.n_layer));
  opts.set("n_embd", Value::integer(o.shape.n_embd));
  opts.set("n_head", Value::integer(o.shape.n_head));
  opts.set("n_kv_head", Value::integer(o.shape.n_kv_head));
  opts.set("ffn_dim", Value::integer(o.shape.ffn_dim));
  opts.set("vocab_size", Value::integer(o.shape.vocab_size));
  opts.set("block_size", Value::integer(o.shape.block_size));
  opts.set("seq_len", Value::integer(o.seq_len));
  opts.set("lr", Value::real(o.train.lr));
  opts.set("beta1", Value::real(o.train.beta1));
  opts.set("beta2", Value::real(o.train.beta2));
  opts.set("eps", Value::real(o.train.eps));
  opts.set("weight_decay", Value::real(o.train.weight_decay));
  opts.set("grad_clip", Value::real(o.train.grad_clip));
  opts.set("rope_theta", Value::real(10000.0));
  manifest.set("options", opts);
  manifest.set("steps", steps);
  manifest.set("arrays", arrays);
  std::ofstream(dir + "/manifest.json") << emit_json(manifest, 2) << "\n";
  return 0;
}
