// schema.h's table of keys: the builder each key is declared with (K, and SectionKeys for the
// section functions of settings.h), the typed fields keys are read into and written from, and
// the keys declared here rather than beside a field, one function a section.
#include "config/schema_table.h"

#include <algorithm>
#include <deque>
#include <type_traits>

#include "config/config.h"
#include "config/model_shapes.h"
#include "config/parsers/parser.h"
#include "config/settings.h"
#include "text/text.h"

namespace sweepbench {
namespace {

// A resolved value into a typed field. The schema has checked the value's type and range, so a
// mismatch here is a bug, not an input error.
void read_value(const Value& v, std::int64_t& out) { out = v.as_int(); }
void read_value(const Value& v, std::uint64_t& out) {
  out = static_cast<std::uint64_t>(v.as_int());
}
void read_value(const Value& v, double& out) { out = v.as_float(); }
void read_value(const Value& v, bool& out) { out = v.as_bool(); }
void read_value(const Value& v, std::string& out) { out = v.is_null() ? "" : v.as_string(); }
void read_value(const Value& v, std::vector<std::string>& out) {
  out.clear();
  if (v.is_null()) return;
  for (const Value& item : v.items()) out.push_back(item.as_string());
}
// A step range, "N" or "FIRST-LAST" (metrics.profile_steps), which config.cc has checked.
void read_value(const Value& v, std::pair<std::int64_t, std::int64_t>& out) {
  std::optional<std::pair<std::int64_t, std::int64_t>> range = parse_step_range(v.as_string());
  if (!range) throw std::logic_error("unexpected step range '" + v.as_string() + "'");
  out = *range;
}
void read_value(const Value& v, std::map<std::string, std::string>& out) {
  out.clear();
  for (const Value::Entry& e : v.entries()) out[e.key] = e.value.as_string();
}
template <class T>
void read_value(const Value& v, std::optional<T>& out) {
  if (v.is_null()) {
    out.reset();
    return;
  }
  T t{};
  read_value(v, t);
  out = std::move(t);
}
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
void read_value(const Value& v, E& out) {
  const std::vector<std::string>& names = names_of<E>();
  auto it = std::find(names.begin(), names.end(), v.as_string());
  if (it == names.end()) throw std::logic_error("unexpected choice '" + v.as_string() + "'");
  out = static_cast<E>(it - names.begin());
}

// A typed field back into a config value.
Value write_value(std::int64_t v) { return Value::integer(v); }
Value write_value(std::uint64_t v) { return Value::integer(static_cast<std::int64_t>(v)); }
Value write_value(double v) { return Value::real(v); }
Value write_value(bool v) { return Value::boolean(v); }
Value write_value(const std::string& v) { return Value::string(v); }
Value write_value(const std::vector<std::string>& v) {
  Value out = Value::list();
  for (const std::string& item : v) out.items().push_back(Value::string(item));
  return out;
}
Value write_value(const std::pair<std::int64_t, std::int64_t>& v) {
  return Value::string(v.first == v.second
                           ? std::to_string(v.first)
                           : std::to_string(v.first) + "-" + std::to_string(v.second));
}
Value write_value(const std::map<std::string, std::string>& v) {
  Value out = Value::map();
  for (const auto& [key, value] : v) out.set(key, Value::string(value));
  return out;
}
template <class T>
Value write_value(const std::optional<T>& v) {
  return v ? write_value(*v) : Value::null();
}
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
Value write_value(E v) {
  return Value::string(enum_name(v));
}

// A fluent builder so the table below reads one key per line.
class K {
 public:
  K(std::string path, KeyType type, Value default_value, std::string description) {
    spec_.path = std::move(path);
    spec_.type = type;
    spec_.default_value = std::move(default_value);
    spec_.description = std::move(description);
    if (spec_.default_value.is_null()) spec_.nullable = true;
  }
  K& nullable() {
    spec_.nullable = true;
    return *this;
  }
  K& min(double v, bool exclusive = false) {
    spec_.min = v;
    spec_.min_exclusive = exclusive;
    return *this;
  }
  K& max(double v, bool exclusive = false) {
    spec_.max = v;
    spec_.max_exclusive = exclusive;
    return *this;
  }
  // A fixed set of names: the key is an enum, also where its field is a string (a registry's
  // names, such as launch.launcher).
  K& choices(std::vector<std::string> c) {
    spec_.type = KeyType::kEnum;
    spec_.choices = std::move(c);
    return *this;
  }
  // Text in one of SLURM's time formats, or a whole number of minutes (slurm.time).
  K& slurm_time() {
    spec_.type = KeyType::kSlurmTime;
    return *this;
  }
  K& unhashed() {
    spec_.hashed = false;
    return *this;
  }
  K& hashed_unless_default() {
    spec_.hashed_unless_default = true;
    return *this;
  }
  K& tagged_unless_default() {
    spec_.tagged_unless_default = true;
    return *this;
  }
  // The key enters config_hash only at points whose `benchmark` is `name`: the infer section
  // does not change the hash (nor the tag) of a training point.
  K& only_for(std::initializer_list<const char*> names) {
    spec_.only_for_benchmarks.assign(names.begin(), names.end());
    return *this;
  }
  K& derived() {
    spec_.derived = true;
    spec_.nullable = true;
    return *this;
  }
  // The field the key is read into: a member of Settings (benchmark) or of one of its sections
  // (train.lr). An enum field gives the key its choices (names_of).
  template <class F>
  K& into(F Settings::*field) {
    set_choices<F>();
    spec_.read = [field](Settings& s, const Value& v, const Value&) { read_value(v, s.*field); };
    spec_.write = [field](const Settings& s) { return write_value(s.*field); };
    return *this;
  }
  template <class Section, class F>
  K& into(Section Settings::*section, F Section::*field) {
    set_choices<F>();
    spec_.read = [section, field](Settings& s, const Value& v, const Value&) {
      read_value(v, (s.*section).*field);
    };
    spec_.write = [section, field](const Settings& s) { return write_value((s.*section).*field); };
    return *this;
  }
  // A field whose reading needs more than the key's own value.
  K& into(std::function<void(Settings&, const Value&, const Value&)> read) {
    spec_.read = std::move(read);
    return *this;
  }
  operator KeySpec() const { return spec_; }  // NOLINT: builder converts implicitly

 private:
  template <class F>
  void set_choices() {
    if constexpr (std::is_enum_v<F>) spec_.choices = names_of<F>();
  }
  KeySpec spec_;
};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class>
constexpr bool kNoKeyType = false;

// The type of key that a field of type F holds: an optional field is a nullable key of its
// value's type (K makes a key whose default is null nullable).
template <class F>
KeyType key_type_of() {
  if constexpr (IsOptional<F>::value) {
    return key_type_of<typename F::value_type>();
  } else if constexpr (std::is_same_v<F, bool>) {
    return KeyType::kBool;
  } else if constexpr (std::is_enum_v<F>) {
    return KeyType::kEnum;
  } else if constexpr (std::is_integral_v<F>) {
    return KeyType::kInt;
  } else if constexpr (std::is_floating_point_v<F>) {
    return KeyType::kFloat;
  } else if constexpr (std::is_same_v<F, std::string> ||
                       std::is_same_v<F, std::pair<std::int64_t, std::int64_t>>) {
    return KeyType::kString;  // a step range is written as text
  } else if constexpr (std::is_same_v<F, std::vector<std::string>>) {
    return KeyType::kStringList;
  } else if constexpr (std::is_same_v<F, std::map<std::string, std::string>>) {
    return KeyType::kStringMap;
  } else {
    static_assert(kNoKeyType<F>, "a field of this type has no key type: add it here");
  }
}

template <class T>
struct Identity {
  using type = T;
};

// What the section functions of settings.h (train_keys and the others) call for each key:
// `key(&TrainSettings::beta1, "train.beta1", 0.9, "AdamW beta1")` declares the key with the
// field's type and the default as that type (std::nullopt: null), and returns its K for the
// range and the rest.
template <class Section>
class SectionKeys {
 public:
  explicit SectionKeys(Section Settings::*section) : section_(section) {}

  template <class F>
  K& operator()(F Section::*field, const char* path, typename Identity<F>::type default_value,
                const char* description) {
    return add(field, path, write_value(default_value), description);
  }
  template <class F>
  K& operator()(F Section::*field, const char* path, std::nullopt_t, const char* description) {
    return add(field, path, Value::null(), description);
  }

  void append_to(std::vector<KeySpec>& keys) const {
    for (const K& k : keys_) keys.push_back(k);
  }

 private:
  template <class F>
  K& add(F Section::*field, const char* path, Value default_value, const char* description) {
    keys_.emplace_back(path, key_type_of<F>(), std::move(default_value), description);
    return keys_.back().into(section_, field);
  }
  Section Settings::*section_;
  std::deque<K> keys_;  // K& handed out stay valid as more are added
};

template <class Section, class Declare>
void append_section(std::vector<KeySpec>& keys, Section Settings::*section, Declare declare) {
  SectionKeys<Section> section_keys(section);
  declare(section_keys);
  section_keys.append_to(keys);
}

void append(std::vector<KeySpec>& keys, std::initializer_list<KeySpec> more) {
  keys.insert(keys.end(), more.begin(), more.end());
}

Value I(std::int64_t v) { return Value::integer(v); }
Value S(const char* v) { return Value::string(v); }
Value N() { return Value::null(); }
Value L() { return Value::list(); }
Value M() { return Value::map(); }

using T = KeyType;

// command.parser's values and doc, from the parsers of config/parsers/ (one file each).
std::vector<std::string> parser_choices() {
  std::vector<std::string> out = {"none"};
  for (const Parser& p : parsers()) out.push_back(p.name);
  return out;
}
std::string parser_doc() {
  std::vector<std::string> named;
  for (const Parser& p : parsers())
    named.push_back(p.program.empty() ? p.name : p.name + " (" + p.program + ")");
  return "Metrics of a known program, added to command.metrics: " + join(named, ", ") + ", or none";
}

void append_top_level_keys(std::vector<KeySpec>& keys) {
  append(keys,
         {
             K("benchmark", T::kEnum, S("train"),
               "What runs at each point: a registered workload (docs/workloads.md); train is "
               "bench-train, infer is bench-infer, command the program of the command section, "
               "serve an inference server under load (bench-serve)")
                 .choices({"train", "infer", "command", "serve"})
                 .hashed_unless_default()
                 .into(&Settings::benchmark),
             K("params", T::kFreeMap, M(),
               "Free keys (any names; scalars or lists) that sweeps vary and {params.NAME} "
               "placeholders use: a program's own options (docs/commands.md)")
                 .hashed_unless_default(),
         });
}

// The model's dimensions, which model_shape_of reads.
void append_model_keys(std::vector<KeySpec>& keys) {
  append(
      keys,
      {
          K("model.preset", T::kEnum, S("gpt2"),
            "Named model shape; each dimension below defaults to the preset's")
              .choices(model_preset_names())
              .only_for({"train", "infer"})
              .into(&Settings::model_preset),
          K("model.arch", T::kEnum, N(),
            "Architecture family: gpt2 (LayerNorm, GELU, learned positions, tied head) or llama "
            "(RMSNorm, RoPE, SwiGLU, GQA, untied head); null = the preset's")
              .choices(model_arch_names())
              .derived()
              .only_for({"train", "infer"}),
          K("model.n_layer", T::kInt, N(), "Transformer blocks; null = the preset's")
              .min(1)
              .max(4096)
              .derived()
              .only_for({"train", "infer"}),
          K("model.n_embd", T::kInt, N(), "Model width d; null = the preset's")
              .min(1)
              .max(1 << 20)
              .derived()
              .only_for({"train", "infer"}),
          K("model.n_head", T::kInt, N(),
            "Attention heads; must divide model.n_embd; null = the preset's")
              .min(1)
              .max(1 << 16)
              .derived()
              .only_for({"train", "infer"}),
          K("model.n_kv_head", T::kInt, N(),
            "Key/value heads (grouped-query attention); must divide model.n_head; null = the "
            "preset's")
              .min(1)
              .max(1 << 16)
              .derived()
              .only_for({"train", "infer"}),
          K("model.ffn_dim", T::kInt, N(),
            "Hidden width of the MLP; null = the preset's, or, when model.n_embd or model.arch is "
            "not the preset's, the architecture's rule (gpt2: 4 n_embd; llama: 8/3 n_embd rounded "
            "up to a multiple of 256)")
              .min(1)
              .max(1 << 24)
              .derived()
              .only_for({"train", "infer"}),
          K("model.vocab_size", T::kInt, N(), "Vocabulary size; null = the preset's")
              .min(1)
              .max(1 << 24)
              .derived()
              .only_for({"train", "infer"}),
          K("model.block_size", T::kInt, N(),
            "Longest sequence the model accepts (position table size); null = the preset's")
              .min(1)
              .max(1 << 24)
              .derived()
              .only_for({"train", "infer"}),
      });
}

// lora.targets, whose null needs the model.
void append_lora_keys(std::vector<KeySpec>& keys) {
  append(keys,
         {
             K("lora.targets", T::kStringList, N(),
               "Projections that get adapters, by the model's names: gpt2 c_attn, attn_proj, c_fc, "
               "mlp_proj; llama wq, wk, wv, wo, w1, w2, w3; null = c_attn (gpt2) or wq, wv "
               "(llama), as Hugging Face peft's defaults")
                 .hashed_unless_default()
                 .only_for({"train"})
                 .into([](Settings& s, const Value& v, const Value& config) {
                   if (v.is_null()) {  // the architecture's own
                     s.train.lora_targets =
                         default_lora_targets(config_at(config, "model.arch").as_string());
                   } else {
                     read_value(v, s.train.lora_targets);
                   }
                 }),
         });
}

// The command section (benchmark: command; docs/commands.md), which CommandSpec reads.
void append_command_keys(std::vector<KeySpec>& keys) {
  append(
      keys,
      {
          K("command.argv", T::kStringList, L(),
            "The program and its arguments, one list item per argv element (no shell); "
            "{placeholders} take the point's values")
              .only_for({"command"}),
          K("command.env", T::kStringMap, M(),
            "Environment variables for the program; values may hold {placeholders}")
              .only_for({"command"}),
          K("command.workdir", T::kString, N(),
            "The program's working directory (may hold {placeholders}, e.g. {out}); null = the "
            "directory bench-sweep run was started in")
              .only_for({"command"}),
          K("command.parser", T::kEnum, S("none"), parser_doc())
              .choices(parser_choices())
              .only_for({"command"}),
          K("command.metrics", T::kRecordList, L(),
            "Figures of merit: a list of {name, unit, from, regex, group, reduce} or {name, unit, "
            "from: json FILE, pointer}, each optional: true or required (docs/commands.md)")
              .only_for({"command"}),
          K("command.success.match", T::kStringList, L(),
            "Regular expressions that must each match a line of the program's stdout or stderr")
              .only_for({"command"}),
          K("command.success.fail", T::kStringList, L(),
            "Regular expressions that must match no line of stdout or stderr (e.g. Traceback)")
              .only_for({"command"}),
          K("command.success.exit_code", T::kInt, I(0),
            "The exit code of a successful run; null = any")
              .min(0)
              .max(255)
              .nullable()
              .only_for({"command"}),
          K("command.success.required", T::kStringList, N(),
            "Metrics a successful run must report; null = every metric not marked optional")
              .only_for({"command"}),
          K("command.oom_patterns", T::kStringList, L(),
            "Regular expressions whose match in a failed run's output makes its status oom; "
            "empty = the usual PyTorch, CUDA and C++ out-of-memory messages (docs/commands.md)")
              .only_for({"command"}),
          K("command.predict_as", T::kEnum, S("none"),
            "Predict the point's memory and time (bench-sweep plan --estimate) as a bench-train "
            "(train) or bench-infer (infer) point of its model.*, train.*, data.* or infer.* "
            "keys, which then describe what the program runs; none = no prediction")
              .choices({"none", "train", "infer"})
              .only_for({"command"})
              .unhashed()
              .tagged_unless_default(),
      });
}

// serve's server: started or reached, ready, stopped (benchmark: serve; docs/serving.md).
void append_serve_server_keys(std::vector<KeySpec>& keys) {
  append(
      keys,
      {
          K("serve.argv", T::kStringList, L(),
            "The server's command, one list item per argv element (no shell); {port}, {host}, "
            "{out} and the point's values as {placeholders}")
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.env", T::kStringMap, M(),
            "Environment variables for the server; values may hold {placeholders}")
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.workdir", T::kString, N(),
            "The server's working directory; null = the directory bench-sweep run was started in")
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.url", T::kString, N(),
            "A server already running (http://host:port), loaded as it is: serve.argv empty, "
            "nothing started or stopped; null = the point starts its own")
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.host", T::kString, S("127.0.0.1"),
            "Where the client reaches the server (and {host} in serve.argv)")
              .only_for({"serve"})
              .tagged_unless_default()
              .unhashed(),
          K("serve.port", T::kInt, N(),
            "The server's port ({port}); null = a free port chosen for each point")
              .min(1)
              .max(65535)
              .nullable()
              .only_for({"serve"})
              .tagged_unless_default()
              .unhashed(),
          K("serve.slurm_step", T::kEnum, S("auto"),
            "auto: inside a SLURM allocation the server runs as a step of its own (srun "
            "--overlap), on serve.node; never: as bench-serve's child")
              .choices({"auto", "never"})
              .only_for({"serve"})
              .unhashed()
              .tagged_unless_default(),
          K("serve.node", T::kInt, N(),
            "Inside an allocation, the node the server's step runs on: its place in the "
            "allocation's node list (0 = the first); null = the client's node")
              .min(0)
              .max(100000)
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.ready.path", T::kString, S("/health"),
            "The server is ready when GET of this path answers 200; null = no HTTP check (with "
            "serve.url: load it at once)")
              .nullable()
              .only_for({"serve"})
              .tagged_unless_default()
              .unhashed(),
          K("serve.ready.log", T::kString, N(),
            "Or ready when a line of its output matches this regular expression (RE2)")
              .only_for({"serve"})
              .tagged_unless_default()
              .unhashed(),
          K("serve.ready.timeout_s", T::kFloat, Value::real(600),
            "Seconds the server has to become ready; past them the point fails")
              .min(0, true)
              .only_for({"serve"})
              .tagged_unless_default()
              .unhashed(),
          K("serve.stop_grace_s", T::kFloat, Value::real(30),
            "Seconds between SIGTERM to the server and SIGKILL to its whole process tree")
              .min(0)
              .only_for({"serve"})
              .tagged_unless_default()
              .unhashed(),
      });
}

// serve's requests and the load they arrive at.
void append_serve_load_keys(std::vector<KeySpec>& keys) {
  append(keys,
         {
             K("serve.api", T::kEnum, S("completions"),
               "completions (/v1/completions) or chat (/v1/chat/completions), streamed")
                 .choices({"completions", "chat"})
                 .only_for({"serve"})
                 .tagged_unless_default(),
             // Beside serve.prompts, not in it: a key two levels down cannot be left out of
             // the hash at its default (config_hash.cc), and the serve points planned before
             // 2026-12-01 keep their tags. Until then output_tokens (128 by default) overrode
             // every conversation's length, against what docs/serving.md said.
             K("serve.dataset_max_tokens", T::kEnum, S("answer"),
               "With serve.prompts.dataset, each request's max_tokens: its conversation's first "
               "answer's estimated length (answer, as vLLM), or serve.prompts.output_tokens")
                 .choices({"answer", "output_tokens"})
                 .only_for({"serve"})
                 .hashed_unless_default()
                 .tagged_unless_default(),
             K("serve.model", T::kString, N(),
               "The model name the requests give; null = the first of the server's GET /v1/models")
                 .only_for({"serve"})
                 .tagged_unless_default(),
             K("serve.body", T::kFreeMap, M(),
               "Fields added to every request's JSON body (temperature, ignore_eos, ...)")
                 .only_for({"serve"})
                 .tagged_unless_default(),
             K("serve.load.mode", T::kEnum, S("poisson"),
               "How requests arrive: poisson (at each level's rate), gamma (bursty, "
               "serve.load.burstiness), concurrency (each level a number of requests in flight) or "
               "ramp (the rate goes from the first level to the second)")
                 .choices({"poisson", "gamma", "concurrency", "ramp"})
                 .only_for({"serve"})
                 .tagged_unless_default(),
             K("serve.load.levels", T::kNumberList, L(),
               "The load levels, measured in turn on one server: request rates per second, or "
               "concurrencies; one number or a list (an axis of numbers gives a level per point)")
                 .min(0, true)
                 .only_for({"serve"})
                 .tagged_unless_default(),
             K("serve.load.burstiness", T::kFloat, Value::real(1),
               "gamma: the shape of the gaps between requests (1 = Poisson, below 1 burstier)")
                 .min(0, true)
                 .only_for({"serve"})
                 .tagged_unless_default(),
             K("serve.load.requests", T::kInt, I(200), "Requests per level")
                 .min(1)
                 .max(10000000)
                 .only_for({"serve"})
                 .tagged_unless_default(),
             K("serve.load.duration_s", T::kFloat, Value::real(0),
               "Longest a level sends requests for (0 = until serve.load.requests are sent)")
                 .min(0)
                 .only_for({"serve"})
                 .tagged_unless_default(),
             K("serve.load.warmup_requests", T::kInt, I(4),
               "Requests sent one at a time before the first level, left out of every figure")
                 .min(0)
                 .max(100000)
                 .only_for({"serve"})
                 .tagged_unless_default(),
             K("serve.load.timeout_s", T::kFloat, Value::real(600),
               "A request's longest time, from its send to its answer's end; past it, an error")
                 .min(0, true)
                 .only_for({"serve"})
                 .tagged_unless_default(),
             K("serve.load.seed", T::kInt, I(0), "Seeds the arrival times and the prompts")
                 .min(0)
                 .only_for({"serve"})
                 .tagged_unless_default(),
         });
}

// serve's prompts, and the SLA its levels are judged by.
void append_serve_prompt_and_sla_keys(std::vector<KeySpec>& keys) {
  append(
      keys,
      {
          K("serve.prompts.input_tokens", T::kInt, I(128),
            "Synthetic prompts: about this many tokens each (one common word a token)")
              .min(1)
              .max(1 << 24)
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.prompts.output_tokens", T::kInt, I(128),
            "Tokens each request asks for (max_tokens)")
              .min(1)
              .max(1 << 24)
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.prompts.range_ratio", T::kFloat, Value::real(0),
            "Synthetic lengths uniform in [n (1 - r), n (1 + r)] for input and output tokens")
              .min(0)
              .max(1, true)
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.prompts.token_ids", T::kNumberList, L(),
            "[low, high]: synthetic prompts as token ids drawn from [low, high) (exact lengths; "
            "completions only); empty = text of common words")
              .min(0)
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.prompts.dataset", T::kString, N(),
            "A ShareGPT-style JSON file of conversations whose first turns are the prompts; null "
            "= synthetic prompts")
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.sla.ttft_ms", T::kFloat, N(),
            "A good request's longest time to first token; null = no bound")
              .min(0, true)
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.sla.tpot_ms", T::kFloat, N(),
            "A good request's longest time per output token after the first; null = no bound")
              .min(0, true)
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.sla.e2e_ms", T::kFloat, N(),
            "A good request's longest end-to-end latency; null = no bound")
              .min(0, true)
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.sla.attainment", T::kFloat, Value::real(0.99),
            "A level meets the SLA when at least this share of its requests are good (0.99: "
            "the bounds hold at p99)")
              .min(0, true)
              .max(1)
              .only_for({"serve"})
              .tagged_unless_default(),
          K("serve.sla.search", T::kInt, I(0),
            "Levels added between the highest that met the SLA and the lowest that did not, "
            "each halving the gap, to narrow the SLA's answer")
              .min(0)
              .max(20)
              .only_for({"serve"})
              .tagged_unless_default(),
      });
}

}  // namespace

// Maxima are far past any real run (4096 layers, vocabularies, contexts and prompts of 16 Mi
// tokens, batches of 1 Mi sequences) so that a slip (n_layer: 1000000000, grad_accum near
// INT64_MAX) is refused at plan time with its key named, instead of allocating until the kernel
// kills the rank. The size checks of bench-train and bench-infer judge what is left.
//
// A key a typed field holds is declared beside its field, in settings.h (train_keys and the
// others, called here); the rest are here: the top level, the model's dimensions (model_shape_of
// reads them), the command section (CommandSpec) and lora.targets, whose null needs the model.
// The order is the table's: docs/config.md's, and that of the keys of every config.yaml.
std::vector<KeySpec> build_table() {
  std::vector<KeySpec> keys;

  // ---- top level ----
  append_top_level_keys(keys);

  // ---- model ----
  append_model_keys(keys);

  // ---- data ----
  append_section(keys, &Settings::data, [](auto& key) { data_keys(key); });

  // ---- train and eval (bench-train; hashed only for benchmark: train) ----
  append_section(keys, &Settings::train, [](auto& key) { train_keys(key); });

  // ---- lora (train.peft: lora) ----
  append_lora_keys(keys);

  // ---- eval ----
  append_section(keys, &Settings::eval, [](auto& key) { eval_keys(key); });

  // ---- infer (bench-infer; hashed only for benchmark: infer) ----
  append_section(keys, &Settings::infer, [](auto& key) { infer_keys(key); });

  // ---- command (benchmark: command; docs/commands.md) ----
  append_command_keys(keys);

  // ---- serve (benchmark: serve; docs/serving.md) ----
  append_serve_server_keys(keys);
  append_serve_load_keys(keys);
  append_serve_prompt_and_sla_keys(keys);

  // ---- launch ----
  append_section(keys, &Settings::launch, [](auto& key) { launch_keys(key); });

  // ---- metrics ----
  append_section(keys, &Settings::metrics, [](auto& key) { metrics_keys(key); });

  // ---- container ----
  append_section(keys, &Settings::container, [](auto& key) { container_keys(key); });

  // ---- slurm ----
  append_section(keys, &Settings::slurm, [](auto& key) { slurm_keys(key); });

  // ---- hardware ----
  append_section(keys, &Settings::hardware, [](auto& key) { hardware_keys(key); });

  return keys;
}

}  // namespace sweepbench
