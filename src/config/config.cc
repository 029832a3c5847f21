#include "config/config.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "config/command_spec.h"
#include "config/model_shapes.h"
#include "config/schema.h"
#include "config/serve_spec.h"
#include "config/yaml_io.h"
#include "text/digest.h"
#include "text/text.h"

namespace sweepbench {
namespace {

void set_mark_deep(Value& v, const Mark& mark) {
  v.set_mark(mark);
  for (Value& item : v.items()) set_mark_deep(item, mark);
  for (Value::Entry& e : v.entries()) {
    e.key_mark = mark;
    set_mark_deep(e.value, mark);
  }
}

std::string join_path(std::string_view prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  return std::string(prefix) + "." + std::string(key);
}

void normalize_into(const Value& node, const std::string& prefix, const Mark& context_mark,
                    Value& out, std::set<std::string>& seen) {
  const Schema& schema = Schema::get();
  if (node.is_null()) return;
  if (!node.is_map()) {
    // A whole document (no prefix) may be any file: its text is not echoed.
    throw Error::input(node.mark().known() ? node.mark() : context_mark, prefix,
                       "expected a mapping of keys, got " +
                           (prefix.empty() ? node.describe_without_text() : node.describe()));
  }
  for (const Value::Entry& e : node.entries()) {
    const Mark& key_mark = e.key_mark.known() ? e.key_mark : context_mark;
    if (e.key.empty() || e.key.front() == '.' || e.key.back() == '.' ||
        e.key.find("..") != std::string::npos) {
      throw Error::input(key_mark, "", "malformed key '" + e.key + "'");
    }
    std::string path = join_path(prefix, e.key);
    Schema::Lookup found = schema.lookup(path);
    Value value = e.value;
    if (!value.mark().known()) value.set_mark(key_mark);
    switch (found.kind) {
      case Schema::Lookup::Kind::kNone:
        throw schema.unknown_key(path, key_mark);
      case Schema::Lookup::Kind::kSection:
        if (!value.is_null() && !value.is_map()) {
          throw Error::input(
              value.mark(), path,
              "is a section; expected a mapping of its keys, got " + value.describe());
        }
        normalize_into(value, path, key_mark, out, seen);
        break;
      case Schema::Lookup::Kind::kKey: {
        if (!seen.insert(path).second) {
          throw Error::input(key_mark, path, "is set twice in the same mapping",
                             "keep one of them");
        }
        Value coerced = schema.coerce(*found.spec, value);
        out.set_path(path, std::move(coerced));
        break;
      }
      case Schema::Lookup::Kind::kMapEntry: {
        if (found.entry.find('.') != std::string::npos) {
          throw Error::input(key_mark, path,
                             "an entry name of " + found.spec->path + " cannot contain '.'");
        }
        if (!seen.insert(path).second || seen.count(found.spec->path) > 0) {
          throw Error::input(key_mark, path, "is set twice in the same mapping");
        }
        Value coerced = schema.coerce_map_entry(*found.spec, found.entry, value);
        Value* map = out.find_path(found.spec->path);
        if (map == nullptr) map = &out.set_path(found.spec->path, Value::map(key_mark));
        map->set(found.entry, std::move(coerced), key_mark);
        break;
      }
    }
  }
}

void collect_keys(const Value& node, const std::string& prefix, std::vector<std::string>& out) {
  const Schema& schema = Schema::get();
  for (const Value::Entry& e : node.entries()) {
    std::string path = join_path(prefix, e.key);
    const KeySpec* spec = schema.find(path);
    bool map_key =
        spec != nullptr && (spec->type == KeyType::kFreeMap || spec->type == KeyType::kStringMap);
    if (schema.is_section(path) && e.value.is_map()) {
      collect_keys(e.value, path, out);
    } else if (map_key && e.value.is_map() && !e.value.entries().empty()) {
      // Each entry of a map key is its own leaf: axes over params.a and params.b are two.
      for (const Value::Entry& entry : e.value.entries()) out.push_back(path + "." + entry.key);
    } else {
      out.push_back(path);
    }
  }
}

const Value& required(const Value& resolved, std::string_view path) {
  return config_at(resolved, path);
}

Error rule_error(const Value& at, std::string_view key, const std::string& message,
                 const std::string& hint = {}) {
  return Error::input(at.mark(), std::string(key), message, hint);
}

// Adds the index of `path`'s top-level entry in `full` to `tops`, once.
void note_top(const Value& full, std::string_view path, std::vector<size_t>* tops) {
  std::string_view top = path.substr(0, path.find('.'));
  const std::vector<Value::Entry>& entries = full.entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].key != top) continue;
    if (std::find(tops->begin(), tops->end(), i) == tops->end()) tops->push_back(i);
    return;
  }
}

// Fills the derived keys (see KeySpec::derived) from the preset and from other keys; `filled`,
// unless null, gets the top-level entries it writes in.
void derive(Value& full, std::vector<size_t>* filled = nullptr) {
  const Value& preset_value = required(full, "model.preset");
  const ModelPreset* preset = find_model_preset(preset_value.as_string());
  if (preset == nullptr) {
    throw rule_error(preset_value, "model.preset",
                     "unknown preset '" + preset_value.as_string() + "'");
  }
  Mark from_preset = preset_value.mark();
  auto fill = [&](const char* path, Value v) {
    Value* slot = full.find_path(path);
    if (!slot->is_null()) return;
    if (filled != nullptr) note_top(full, path, filled);
    *slot = std::move(v);
  };
  const ModelShape& s = preset->shape;
  fill("model.arch", Value::string(s.arch, from_preset));
  fill("model.n_layer", Value::integer(s.n_layer, from_preset));
  fill("model.n_embd", Value::integer(s.n_embd, from_preset));
  fill("model.n_head", Value::integer(s.n_head, from_preset));
  // A model that overrides n_head without n_kv_head gets plain multi-head attention when the
  // preset has it, and keeps the preset's ratio of query to key/value heads otherwise.
  const Value& n_head = required(full, "model.n_head");
  std::int64_t kv = s.n_kv_head;
  if (n_head.as_int() != s.n_head) {
    kv = s.n_kv_head == s.n_head
             ? n_head.as_int()
             : std::max<std::int64_t>(1, n_head.as_int() * s.n_kv_head / s.n_head);
  }
  fill("model.n_kv_head", Value::integer(kv, n_head.mark()));
  // The MLP's width follows the model's: the preset's own where the width and architecture are
  // the preset's, else the architecture's rule ({preset: gpt2, n_embd: 128} is 512 wide, not
  // the preset's 3072).
  const Value& n_embd = required(full, "model.n_embd");
  const Value& arch = required(full, "model.arch");
  if (n_embd.as_int() == s.n_embd && arch.as_string() == s.arch) {
    fill("model.ffn_dim", Value::integer(s.ffn_dim, from_preset));
  } else {
    fill("model.ffn_dim",
         Value::integer(ffn_dim_for(arch.as_string(), n_embd.as_int()), n_embd.mark()));
  }
  fill("model.vocab_size", Value::integer(s.vocab_size, from_preset));
  fill("model.block_size", Value::integer(s.block_size, from_preset));
  const Value& block = required(full, "model.block_size");
  fill("data.seq_len", Value::integer(block.as_int(), block.mark()));
  const Value& mb = required(full, "train.micro_batch");
  fill("eval.micro_batch", Value::integer(mb.as_int(), mb.mark()));
}

// The largest tensor no machine can hold: 16 TiB (a GPU holds 0.2 TiB, the biggest hosts tens).
constexpr double kMaxTensorBytes = 16.0 * 1024 * 1024 * 1024 * 1024;

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (bytes >= 1000 && u < 6) {
    bytes /= 1000;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), bytes < 10 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

// A micro batch so large that one activation cannot exist anywhere (or whose element count
// overflows) is refused here, where the shapes are known, instead of ending in bad_alloc or a
// crash after the run has started. Sizes in double: the products may overflow 64 bits.
void check_tensor_sizes(const Value& full) {
  const double seq = static_cast<double>(required(full, "data.seq_len").as_int());
  const double vocab = static_cast<double>(required(full, "model.vocab_size").as_int());
  const double heads = static_cast<double>(required(full, "model.n_head").as_int());
  for (const char* key : {"train.micro_batch", "eval.micro_batch"}) {
    const Value& mb = required(full, key);
    const double b = static_cast<double>(mb.as_int());
    // fp32 logits (B, T, V) and attention scores (B, H, T, T): the two largest activations.
    double logits = b * seq * vocab * 4, scores = b * heads * seq * seq * 4;
    bool by_logits = logits >= scores;
    double bytes = by_logits ? logits : scores;
    if (bytes <= kMaxTensorBytes) continue;
    std::string shape = by_logits
                            ? "the logits (micro_batch x seq_len x vocab_size floats)"
                            : "the attention scores (micro_batch x n_head x seq_len^2 floats)";
    if (mb.as_int() > 1) {
      throw rule_error(mb, key,
                       std::to_string(mb.as_int()) + " is too large: " + shape + " would need " +
                           bytes_text(bytes) + ", more than any machine holds",
                       "lower it (use train.grad_accum for a larger batch per step)");
    }
    // One sequence is already too much: the shape is to blame, not the batch.
    const char* culprit = by_logits && vocab > seq ? "model.vocab_size" : "data.seq_len";
    const Value& v = required(full, culprit);
    throw rule_error(v, culprit,
                     std::to_string(v.as_int()) + " is too large: even at " + key + " 1, " + shape +
                         " would need " + bytes_text(bytes) + ", more than any machine holds",
                     "lower it");
  }
}

// bench-infer's rules: the sequence fits the model, the choices combine, the cache can exist.
void check_infer_rules(const Value& full) {
  auto at = [&](const char* path) -> const Value& { return required(full, path); };
  const Value& in = at("infer.input_tokens");
  const Value& out = at("infer.output_tokens");
  const Value& block = at("model.block_size");
  if (in.as_int() + out.as_int() > block.as_int()) {
    throw rule_error(
        out, "infer.output_tokens",
        "infer.input_tokens + infer.output_tokens = " + std::to_string(in.as_int() + out.as_int()) +
            " exceeds model.block_size (" + std::to_string(block.as_int()) + ")",
        "generate fewer tokens, shorten the prompt or raise model.block_size");
  }
  const Value& beams = at("infer.num_beams");
  if (beams.as_int() > 1 && at("infer.do_sample").as_bool()) {
    throw rule_error(beams, "infer.num_beams",
                     "beam search (num_beams " + std::to_string(beams.as_int()) +
                         ") is deterministic, but infer.do_sample is true",
                     "set infer.num_beams: 1 to sample, or infer.do_sample: false for beams");
  }
  // The cache and the prefill's attention scores are the two largest tensors.
  const double b = static_cast<double>(at("infer.batch_size").as_int() * beams.as_int());
  const double seq = static_cast<double>(in.as_int() + out.as_int());
  const double layers = static_cast<double>(at("model.n_layer").as_int());
  const double kv_width = static_cast<double>(
      at("model.n_kv_head").as_int() * (at("model.n_embd").as_int() / at("model.n_head").as_int()));
  const double cache = 2 * layers * kv_width * 4 * b * seq;
  const double scores = b * static_cast<double>(at("model.n_head").as_int()) * seq * seq * 4;
  if (std::max(cache, scores) > kMaxTensorBytes) {
    throw rule_error(at("infer.batch_size"), "infer.batch_size",
                     std::to_string(at("infer.batch_size").as_int()) +
                         " is too large: the KV cache or the attention scores would need " +
                         bytes_text(std::max(cache, scores)) + ", more than any machine holds",
                     "lower infer.batch_size, infer.num_beams or the token counts");
  }
}

// A list key of names from `allowed`, each at most once: an unknown name is "'x' <unknown>"
// with the fix `use`, a repeated one "'x' is named twice". Returns the names.
std::vector<std::string> check_names(const Value& list, std::string_view key,
                                     const std::vector<std::string>& allowed,
                                     const std::string& unknown, const std::string& use) {
  std::vector<std::string> seen;
  for (const Value& item : list.items()) {
    const std::string& name = item.as_string();
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      throw rule_error(item, key, "'" + name + "' " + unknown, use);
    }
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      throw rule_error(item, key, "'" + name + "' is named twice");
    }
    seen.push_back(name);
  }
  return seen;
}

// metrics.profile_activities: some of cpu and cuda, once each; cuda not on launch.device: cpu.
void check_profile_activities(const Value& full) {
  const Value& list = required(full, "metrics.profile_activities");
  if (!list.is_list()) return;
  if (list.items().empty()) {
    throw rule_error(list, "metrics.profile_activities",
                     "is empty: the profiler would record nothing",
                     "name cpu, cuda or both, or leave it null");
  }
  const std::vector<std::string> seen =
      check_names(list, "metrics.profile_activities", {"cpu", "cuda"}, "is not an activity",
                  "use cpu, cuda or both");
  const Value& device = required(full, "launch.device");
  if (device.as_string() == "cpu" && std::find(seen.begin(), seen.end(), "cuda") != seen.end()) {
    throw rule_error(list, "metrics.profile_activities",
                     "cuda records GPU kernels, but launch.device is cpu",
                     "profile cpu only, or set launch.device to cuda or auto");
  }
}

// train.peft: lora names projections the model has, once each, and is not combined with
// ZeRO-3 (whose gathering covers trainable parameters only).
void check_lora_rules(const Value& full) {
  auto at = [&](const char* path) -> const Value& { return required(full, path); };
  const Value& peft = at("train.peft");
  if (peft.as_string() != "lora") return;
  const std::string arch = at("model.arch").as_string();
  ModelShape shape;
  shape.arch = arch;
  shape.n_embd = shape.n_head = shape.n_kv_head = 1;
  std::vector<std::string> names;
  for (const Projection& p : block_projections(shape)) names.push_back(p.name);
  const Value& targets = at("lora.targets");
  if (targets.is_list()) {
    if (targets.items().empty()) {
      throw rule_error(targets, "lora.targets", "is empty: LoRA would train nothing",
                       "name projections (" + join(names, ", ") + ") or leave it null");
    }
    check_names(targets, "lora.targets", names, "is not a projection of a " + arch + " block",
                "use some of " + join(names, ", "));
  }
  const Value& dropout = at("lora.dropout");
  if (dropout.as_float() >= 1.0) {
    throw rule_error(dropout, "lora.dropout", "must be below 1, got " + scalar_text(dropout),
                     "use a probability in [0, 1)");
  }
  const Value& stage = at("train.zero_stage");
  if (stage.as_int() == 3) {
    throw rule_error(stage, "train.zero_stage",
                     "3 with train.peft: lora is not supported: ZeRO-3 shards only trainable "
                     "parameters, and LoRA's frozen weights would stay whole on every rank",
                     "use train.zero_stage 0 to 2 with LoRA (its optimizer state is small)");
  }
}

// launch.tensor_parallel t splits attention heads, key-value heads and the MLP over groups of t
// ranks: t divides all of them and the ranks.
void check_tensor_parallel_rules(const Value& full) {
  auto at = [&](const char* path) -> const Value& { return required(full, path); };
  const Value& tp = at("launch.tensor_parallel");
  const std::int64_t t = tp.as_int();
  if (t == 1) return;
  auto must_divide = [&](const char* key, const char* what) {
    const std::int64_t n = at(key).as_int();
    if (n % t != 0) {
      throw rule_error(tp, "launch.tensor_parallel",
                       std::to_string(t) + " does not divide " + key + " (" + std::to_string(n) +
                           "): each of the t ranks holds an equal part of the " + what,
                       "use a t that divides it");
    }
  };
  must_divide("launch.ranks", "ranks (the rest is data parallelism)");
  must_divide("model.n_head", "attention heads");
  must_divide("model.n_kv_head", "key-value heads");
  must_divide("model.ffn_dim", "MLP's hidden units");
  if (at("train.peft").as_string() == "lora") {
    throw rule_error(tp, "launch.tensor_parallel",
                     "tensor parallelism with train.peft: lora is not supported",
                     "use launch.tensor_parallel: 1 with LoRA");
  }
}

// train.cuda_graph replays one step of one rank: no collectives, no host decisions inside it
// (fp16's loss scaling reads the gradient norm on the host), no host optimizer, no profiler.
void check_cuda_graph_rules(const Value& full) {
  auto at = [&](const char* path) -> const Value& { return required(full, path); };
  const Value& graph = at("train.cuda_graph");
  if (!graph.as_bool()) return;
  auto refuse = [&](const std::string& why, const std::string& fix) {
    throw rule_error(graph, "train.cuda_graph", why, fix);
  };
  const std::string fix = "set train.cuda_graph: false for this point";
  if (at("launch.ranks").as_int() != 1) {
    refuse("a captured step is one rank's (launch.ranks is " +
               std::to_string(at("launch.ranks").as_int()) + "): its collectives are not captured",
           fix + ", or launch.ranks: 1");
  }
  if (at("train.zero_stage").as_int() != 0) refuse("needs train.zero_stage: 0", fix);
  if (at("train.dtype").as_string() == "fp16") {
    refuse("fp16's dynamic loss scaling decides on the host each step, which a graph cannot",
           fix + ", or train.dtype: bf16");
  }
  if (at("train.offload_optimizer").as_bool()) {
    refuse("an offloaded optimizer steps on the host, outside any graph", fix);
  }
  if (!at("metrics.profile_steps").is_null()) {
    refuse("a profiled step of a graph would show one replay, not its ops",
           fix + " while profiling");
  }
  if (at("train.warmup_steps").as_int() < 2) {
    refuse(
        "its first two steps (eager, then captured) must be warm-up, but train.warmup_steps is " +
            std::to_string(at("train.warmup_steps").as_int()),
        "make train.warmup_steps at least 2, or " + fix);
  }
}

void check_rules(const Value& full) {
  auto at = [&](const char* path) -> const Value& { return required(full, path); };
  const Value& n_embd = at("model.n_embd");
  const Value& n_head = at("model.n_head");
  const Value& n_kv = at("model.n_kv_head");
  if (n_embd.as_int() % n_head.as_int() != 0) {
    throw rule_error(n_head, "model.n_head",
                     std::to_string(n_head.as_int()) + " does not divide model.n_embd (" +
                         std::to_string(n_embd.as_int()) + ")");
  }
  if (n_kv.as_int() > n_head.as_int() || n_head.as_int() % n_kv.as_int() != 0) {
    throw rule_error(n_kv, "model.n_kv_head",
                     std::to_string(n_kv.as_int()) + " does not divide model.n_head (" +
                         std::to_string(n_head.as_int()) + ")");
  }
  if (at("model.arch").as_string() == "llama" && (n_embd.as_int() / n_head.as_int()) % 2 != 0) {
    throw rule_error(n_embd, "model.n_embd",
                     "rotary embeddings need an even head size, but n_embd / n_head = " +
                         std::to_string(n_embd.as_int() / n_head.as_int()));
  }
  const Value& seq = at("data.seq_len");
  const Value& block = at("model.block_size");
  if (seq.as_int() > block.as_int()) {
    throw rule_error(seq, "data.seq_len",
                     std::to_string(seq.as_int()) + " exceeds model.block_size (" +
                         std::to_string(block.as_int()) + ")",
                     "lower data.seq_len or raise model.block_size");
  }
  const Value& steps = at("train.steps");
  const Value& warmup = at("train.warmup_steps");
  if (warmup.as_int() >= steps.as_int()) {
    throw rule_error(warmup, "train.warmup_steps",
                     std::to_string(warmup.as_int()) + " leaves no measured step of train.steps (" +
                         std::to_string(steps.as_int()) + ")",
                     "make train.warmup_steps less than train.steps");
  }
  check_tensor_sizes(full);
  if (const Value& rows = at("train.loss_chunk_rows");
      rows.as_int() > 0 && !at("train.fused_loss").as_bool()) {
    throw rule_error(rows, "train.loss_chunk_rows",
                     std::to_string(rows.as_int()) +
                         " without train.fused_loss: the whole logits are made, not chunks",
                     "set train.fused_loss: true, or leave train.loss_chunk_rows at 0");
  }
  check_lora_rules(full);
  check_tensor_parallel_rules(full);
  check_cuda_graph_rules(full);
  if (const Value& profile = at("metrics.profile_steps"); !profile.is_null()) {
    auto range = parse_step_range(profile.as_string());
    if (!range) {
      throw rule_error(profile, "metrics.profile_steps",
                       "'" + profile.as_string() + "' is not a step or a range of steps",
                       "write \"12\" or \"12-14\" (0-based, first <= last)");
    }
    if (range->second >= steps.as_int()) {
      throw rule_error(profile, "metrics.profile_steps",
                       "step " + std::to_string(range->second) + " is past the last step (" +
                           std::to_string(steps.as_int() - 1) + ")",
                       "profile steps below train.steps");
    }
    // The profiled steps are left out of the statistics, as the warm-up is.
    std::int64_t measured = steps.as_int() - warmup.as_int();
    std::int64_t overlap =
        std::max<std::int64_t>(0, range->second - std::max(range->first, warmup.as_int()) + 1);
    if (measured - overlap < 1) {
      throw rule_error(profile, "metrics.profile_steps",
                       "leaves no measured step: the profiled steps are left out of every "
                       "statistic, as the warm-up is",
                       "raise train.steps or profile fewer steps");
    }
  }
  check_profile_activities(full);
  const Value& ranks = at("launch.ranks");
  const Value& nodes = at("launch.nodes");
  if (ranks.as_int() % nodes.as_int() != 0) {
    throw rule_error(nodes, "launch.nodes",
                     "launch.ranks (" + std::to_string(ranks.as_int()) +
                         ") is not a multiple of launch.nodes (" + std::to_string(nodes.as_int()) +
                         ")");
  }
  const Value& source = at("data.source");
  if (source.as_string() != "synthetic" && at("data.path").is_null()) {
    throw rule_error(source, "data.path",
                     "data.source '" + source.as_string() + "' needs a data.path");
  }
  if (source.as_string() == "text" && at("model.vocab_size").as_int() < 256) {
    throw rule_error(at("model.vocab_size"), "model.vocab_size",
                     "byte-level text needs at least 256 tokens, got " +
                         std::to_string(at("model.vocab_size").as_int()));
  }
  if (at("benchmark").as_string() == "infer") check_infer_rules(full);
  command_spec_of(full);  // the command section and launch.setup's placeholders
  serve_spec_of(full);    // a serve point's server, load plan and SLA
  const Value& runtime = at("container.runtime");
  const Value& image = at("container.image");
  if (runtime.as_string() != "none" && image.is_null()) {
    throw rule_error(runtime, "container.image",
                     "container.runtime '" + runtime.as_string() + "' needs a container.image");
  }
  if (runtime.as_string() == "none" && !image.is_null()) {
    throw rule_error(image, "container.runtime",
                     "container.image is set but container.runtime is none",
                     "set container.runtime, or remove container.image");
  }
  for (const Value& bind : at("container.binds").items()) {
    const std::string& text = bind.as_string();
    if (text.find(',') != std::string::npos) {
      throw rule_error(bind, "container.binds",
                       "'" + text +
                           "' holds a ',', which Apptainer and Singularity read as "
                           "the end of one bind and the start of another",
                       "bind a path without ',' (a symbolic link to it, say)");
    }
    if (!parse_bind_spec(text)) {
      throw rule_error(bind, "container.binds",
                       "'" + text + "' is not SRC:DST[:ro] with absolute paths",
                       "write e.g. /scratch/data:/data:ro (or /scratch/data for the same path); "
                       "a path that holds ':' cannot be bound, as every runtime splits there");
    }
  }
}

}  // namespace

Value normalize_partial_config(const Value& node, std::string_view prefix) {
  Value out = Value::map(node.mark());
  std::set<std::string> seen;
  if (!prefix.empty() && Schema::get().lookup(prefix).kind != Schema::Lookup::Kind::kSection) {
    // An axis over one key or map entry: wrap the value so the same code checks it.
    Value wrapper = Value::map(node.mark());
    wrapper.set(std::string(prefix), node, node.mark());
    normalize_into(wrapper, "", node.mark(), out, seen);
    return out;
  }
  normalize_into(node, std::string(prefix), node.mark(), out, seen);
  return out;
}

std::vector<std::string> partial_config_keys(const Value& partial) {
  std::vector<std::string> keys;
  collect_keys(partial, "", keys);
  return keys;
}

Override parse_override(const std::string& text) {
  Mark mark = Mark::in("--set " + text);
  size_t eq = text.find('=');
  if (eq == std::string::npos) {
    throw Error::input(mark, "", "expected KEY=VALUE", "for example --set train.micro_batch=8");
  }
  if (find_invalid_utf8(text) != std::string::npos) {
    throw Error::input(mark, "", "the override is not valid UTF-8");
  }
  Override o;
  o.text = text;
  o.key = trim(text.substr(0, eq));
  if (o.key.empty()) throw Error::input(mark, "", "the key before '=' is empty");
  Value value = parse_yaml(text.substr(eq + 1), mark.str());
  set_mark_deep(value, mark);
  Value wrapper = Value::map(mark);
  wrapper.set(o.key, value, mark);
  o.partial = normalize_partial_config(wrapper);
  return o;
}

std::vector<Override> parse_overrides(const std::vector<std::string>& texts) {
  std::vector<Override> out;
  for (const std::string& t : texts) out.push_back(parse_override(t));
  return out;
}

Value resolve_config(const Value& partial) {
  Value full = Schema::get().defaults();
  merge_into(full, partial);
  derive(full);
  check_rules(full);
  return full;
}

namespace {

// Whether `full` has the top-level keys of `defaults`, in order.
bool same_top_keys(const Value& full, const Value& defaults) {
  const std::vector<Value::Entry>& a = full.entries();
  const std::vector<Value::Entry>& b = defaults.entries();
  if (!full.is_map() || a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].key != b[i].key) return false;
  }
  return true;
}

}  // namespace

void ConfigResolver::resolve(const Value& partial, Value& full) {
  const Value& defaults = Schema::get().defaults();
  std::vector<Value::Entry>& entries = full.entries();
  if (&full != last_ || !same_top_keys(full, defaults)) {
    full = defaults;
  } else {
    for (size_t i : dirty_) entries[i] = defaults.entries()[i];
  }
  last_ = &full;
  // What this call changes, noted as it goes: the next call resets it. (A key the defaults lack
  // adds an entry: the next call sees another layout.)
  dirty_.clear();
  for (const Value::Entry& e : partial.entries()) note_top(full, e.key, &dirty_);
  merge_into(full, partial);
  derive(full, &dirty_);
  check_rules(full);
}

ModelShape model_shape_of(const Value& r) {
  ModelShape s;
  s.arch = config_at(r, "model.arch").as_string();
  s.n_layer = config_at(r, "model.n_layer").as_int();
  s.n_embd = config_at(r, "model.n_embd").as_int();
  s.n_head = config_at(r, "model.n_head").as_int();
  s.n_kv_head = config_at(r, "model.n_kv_head").as_int();
  s.ffn_dim = config_at(r, "model.ffn_dim").as_int();
  s.vocab_size = config_at(r, "model.vocab_size").as_int();
  s.block_size = config_at(r, "model.block_size").as_int();
  return s;
}

Value loosen_derived_keys(const Value& partial) {
  Value out = partial;
  for (const KeySpec& k : Schema::get().keys()) {
    if (!k.derived) continue;
    const Value* value = partial.find_path(k.path);
    if (value == nullptr || value->is_null()) continue;
    // Would this key get the same value if it were left to be derived?
    Value without = partial;
    without.set_path(k.path, Value::null());
    try {
      if (config_at(resolve_config(without), k.path) == *value) out.set_path(k.path, Value::null());
    } catch (const Error&) {
      // It cannot be derived from the rest: it is explicit.
    }
  }
  return out;
}

Value load_point_config(const std::string& path, const std::vector<Override>& overrides,
                        PointLoad* load) {
  const std::string benchmark = load != nullptr ? load->benchmark : "";
  Value partial = normalize_partial_config(load_yaml_file(path));
  // A point config holds its derived values written out; those still equal to what their source
  // gives follow an override of the source (--set model.preset=... changes the shape).
  if (!overrides.empty()) partial = loosen_derived_keys(partial);
  for (const Override& o : overrides) merge_into(partial, o.partial);
  if (!benchmark.empty()) {
    // The program says which kind it runs: a config that names none is of that kind, one that
    // names another is refused before its sections are checked as the wrong kind's.
    const Value* named = partial.find("benchmark");
    if (named == nullptr || named->is_null()) {
      partial.set("benchmark", Value::string(benchmark));
    } else if (named->is_string() && named->as_string() != benchmark) {
      throw Error::input(
          named->mark().known() ? named->mark() : Mark::in(path), "benchmark",
          "is '" + named->as_string() + "', but this program runs '" + benchmark + "' points",
          "run it with bench-" + named->as_string() + ", or set benchmark: " + benchmark);
    }
  }
  if (load != nullptr && load->running_ranks > 0) {
    // What depends on the number of ranks (launch.tensor_parallel divides it) is checked, and
    // recorded, for the ranks running: `mpirun -n 2 bench-train` of a launch.ranks: 1 config.
    const Value* ranks = partial.find_path("launch.ranks");
    load->configured_ranks =
        ranks != nullptr && ranks->is_int()
            ? ranks->as_int()
            : Schema::get().lookup("launch.ranks").spec->default_value.as_int();
    partial.set_path("launch.ranks", Value::integer(load->running_ranks));
  }
  return resolve_config(partial);
}

bool is_config_column(const std::string& column) {
  Schema::Lookup found = Schema::get().lookup(column);
  return found.kind == Schema::Lookup::Kind::kKey || found.kind == Schema::Lookup::Kind::kMapEntry;
}

std::string short_key(const std::string& column) {
  size_t dot = column.rfind('.');
  return dot == std::string::npos ? column : column.substr(dot + 1);
}

std::vector<std::string> varying_columns(
    const std::vector<std::string>& columns, size_t rows,
    const std::function<std::string(size_t row, const std::string& column)>& cell,
    const std::vector<std::string>& first) {
  auto has = [](const std::vector<std::string>& list, const std::string& c) {
    return std::find(list.begin(), list.end(), c) != list.end();
  };
  std::vector<std::string> candidates, derived;
  for (const std::string& c : first) {
    if (has(columns, c) && !has(candidates, c)) candidates.push_back(c);
  }
  for (const std::string& c : columns) {
    if (has(candidates, c) || !is_config_column(c)) continue;
    Schema::Lookup found = Schema::get().lookup(c);
    bool is_derived = found.kind == Schema::Lookup::Kind::kKey && found.spec->derived;
    (is_derived ? derived : candidates).push_back(c);
  }
  candidates.insert(candidates.end(), derived.begin(), derived.end());
  std::vector<std::string> out;
  std::set<std::vector<size_t>> partitions;
  for (const std::string& c : candidates) {
    std::map<std::string, size_t> ids;
    std::vector<size_t> partition;
    size_t set_values = 0;
    for (size_t r = 0; r < rows; ++r) {
      std::string v = cell(r, c);
      auto [it, fresh] = ids.emplace(v, ids.size());
      if (fresh && !v.empty()) ++set_values;
      partition.push_back(it->second);
    }
    if (set_values < 2) continue;
    if (!partitions.insert(partition).second) continue;
    out.push_back(c);
  }
  return out;
}

std::optional<BindSpec> parse_bind_spec(const std::string& text) {
  size_t colon = text.find(':');
  BindSpec b;
  b.src = text.substr(0, colon);
  b.dst = colon == std::string::npos ? b.src : text.substr(colon + 1);
  std::string mode;
  if (size_t second = b.dst.find(':'); second != std::string::npos) {
    mode = b.dst.substr(second + 1);
    b.dst = b.dst.substr(0, second);
  }
  if (b.src.empty() || b.src[0] != '/' || b.dst.empty() || b.dst[0] != '/' ||
      (!mode.empty() && mode != "ro" && mode != "rw")) {
    return std::nullopt;
  }
  b.read_only = mode == "ro";
  return b;
}

}  // namespace sweepbench
